// Sorting the cut's visible clusters by material slot, so each slot is one
// indirect draw: count per slot, a prefix over the slots (each slot's draw
// arguments and the start of its segment), then a scatter into the segments.
// The counts, starts and cursors live in `bins` (three arrays of slot_count).

struct BinParams {
    slot_count: u32,
    capacity: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: BinParams;
@group(0) @binding(1) var<storage, read> counter: array<u32, 2>;
@group(0) @binding(2) var<storage, read> visible: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> clusters: array<Cluster>;
@group(0) @binding(4) var<storage, read> instances: array<Instance>;
// Per model two words (first entry, count) then the entries: material slots.
@group(0) @binding(5) var<storage, read> material_map: array<u32>;
@group(0) @binding(6) var<storage, read_write> bins: array<atomic<u32>>;
// Per slot a DrawIndirectArgs (four words).
@group(0) @binding(7) var<storage, read_write> args: array<u32>;
@group(0) @binding(8) var<storage, read_write> sorted: array<vec2<u32>>;
// The dispatch of `count` and `scatter` (three words).
@group(0) @binding(9) var<storage, read_write> dispatch: array<u32, 3>;

fn visible_count() -> u32 {
    return min(counter[0], params.capacity);
}

// The slot drawing a visible pair: the instance's own material, else its
// model's material for the cluster (the last one past the model's count);
// NO_MATERIAL where the model has none.
fn slot_of(pair: vec2<u32>) -> u32 {
    let inst = instances[pair.x];
    if inst.material != NO_MATERIAL {
        return inst.material;
    }
    let c = clusters[pair.y];
    let first = material_map[2u * c.model];
    let count = material_map[2u * c.model + 1u];
    if count == 0u {
        return NO_MATERIAL;
    }
    return material_map[first + min(c.triangles_material >> 16u, count - 1u)];
}

@compute @workgroup_size(1)
fn plan() {
    let groups = min((visible_count() + 63u) / 64u, 65535u);
    dispatch[0] = groups;
    dispatch[1] = 1u;
    dispatch[2] = 1u;
}

@compute @workgroup_size(64)
fn count(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = visible_count();
    for (var i = id.x; i < n; i += groups.x * 64u) {
        let s = slot_of(visible[i]);
        if s < params.slot_count {
            atomicAdd(&bins[s], 1u);
        }
    }
}

@compute @workgroup_size(1)
fn offsets() {
    let n = params.slot_count;
    var at = 0u;
    for (var s = 0u; s < n; s++) {
        let c = atomicLoad(&bins[s]);
        atomicStore(&bins[n + s], at);
        atomicStore(&bins[2u * n + s], at);
        args[4u * s] = 384u;
        args[4u * s + 1u] = c;
        args[4u * s + 2u] = 0u;
        args[4u * s + 3u] = 0u;
        at += c;
    }
}

@compute @workgroup_size(64)
fn scatter(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = visible_count();
    for (var i = id.x; i < n; i += groups.x * 64u) {
        let pair = visible[i];
        let s = slot_of(pair);
        if s < params.slot_count {
            sorted[atomicAdd(&bins[2u * params.slot_count + s], 1u)] = pair;
        }
    }
}
