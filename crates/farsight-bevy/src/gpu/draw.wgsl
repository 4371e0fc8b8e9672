// Drawing the visible clusters without copies: one draw instance per visible
// cluster, a slot's 384 vertices each, every vertex pulled from the pools as
// stored (32-byte vertices, positions dequantised in the model's bounds).
// Padding triangles repeat one index, so they have no area and are dropped
// before rasterising.

struct DrawView {
    clip_from_world: mat4x4<f32>,
    light: vec4<f32>,
    // 1: tint by level.
    tint_levels: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> draw_view: DrawView;
@group(0) @binding(1) var<storage, read> clusters: array<Cluster>;
@group(0) @binding(2) var<storage, read> models: array<Model>;
@group(0) @binding(3) var<storage, read> instances: array<Instance>;
@group(0) @binding(4) var<storage, read> visible: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> vertices: array<u32>;
@group(0) @binding(6) var<storage, read> indices: array<u32>;

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) @interpolate(flat) level: u32,
}

@vertex
fn vertex(@builtin(vertex_index) vi: u32, @builtin(instance_index) k: u32) -> VertexOut {
    let p = pull(k, vi);
    let inst = instances[visible[k].x];
    let world = affine(inst.world_from_local, p.position);
    let n = inst.world_from_local;
    var out: VertexOut;
    out.clip = draw_view.clip_from_world * vec4<f32>(world, 1.0);
    out.normal = normalize(vec3<f32>(dot(n[0].xyz, p.normal), dot(n[1].xyz, p.normal), dot(n[2].xyz, p.normal)));
    out.level = p.level;
    return out;
}

@fragment
fn fragment(in: VertexOut) -> @location(0) vec4<f32> {
    let lambert = 0.3 + 0.7 * max(dot(normalize(in.normal), normalize(draw_view.light.xyz)), 0.0);
    var base = vec3<f32>(0.8, 0.8, 0.8);
    if draw_view.tint_levels != 0u {
        var tints = array<vec3<f32>, 6>(
            vec3<f32>(0.2, 0.8, 0.2), vec3<f32>(0.9, 0.8, 0.1), vec3<f32>(0.9, 0.2, 0.2),
            vec3<f32>(0.2, 0.4, 0.9), vec3<f32>(0.8, 0.3, 0.9), vec3<f32>(0.2, 0.8, 0.9),
        );
        base = tints[in.level % 6u];
    }
    return vec4<f32>(base * lambert, 1.0);
}

// For the readback test: every pulled vertex of the first `n` visible clusters,
// position and normal (`slot` 384 vertices per cluster).
@group(0) @binding(7) var<storage, read_write> pulled: array<vec4<f32>>;

@compute @workgroup_size(64)
fn pull_all(@builtin(global_invocation_id) id: vec3<u32>) {
    if 2u * id.x + 1u >= arrayLength(&pulled) {
        return;
    }
    let p = pull(id.x / 384u, id.x % 384u);
    pulled[2u * id.x] = vec4<f32>(p.position, f32(p.level));
    pulled[2u * id.x + 1u] = vec4<f32>(p.normal, 0.0);
}
