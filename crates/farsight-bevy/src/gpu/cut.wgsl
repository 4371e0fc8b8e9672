// The cut on the GPU: one thread per (instance, resident cluster of its model).
// The metric is farsight-cluster's CutView::draws, operation for operation:
// draw when the own error projects to at most the threshold and the parent's
// error to more; the finest resident level's own error counts as zero.

struct View {
    planes: array<vec4<f32>, 6>,
    camera: vec4<f32>,
    p11: f32,
    orthographic: u32,
    viewport_height: f32,
    threshold_px: f32,
    instance_count: u32,
    groups_y: u32,
    visible_capacity: u32,
    frustum: u32,
}

struct DrawArgs {
    vertex_count: u32,
    instance_count: u32,
    first_vertex: u32,
    first_instance: u32,
}

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> clusters: array<Cluster>;
@group(0) @binding(2) var<storage, read> models: array<Model>;
@group(0) @binding(3) var<storage, read> resident: array<u32>;
@group(0) @binding(4) var<storage, read> instances: array<Instance>;
@group(0) @binding(5) var<storage, read_write> visible: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> counter: array<atomic<u32>, 2>;
@group(0) @binding(7) var<storage, read_write> draw: DrawArgs;

const NO_PARENT_ERROR: f32 = 3.40282347e38;

// Whether `error` at the nearest point of `sphere` covers more than the
// threshold: farsight-lod's screen_space_error_px(error * scale, d * scale, ..)
// compared as CutView does.
fn over_threshold(sphere: vec4<f32>, error: f32, cam: vec3<f32>, scale: f32) -> bool {
    if error >= NO_PARENT_ERROR {
        return true;
    }
    let e = error * scale;
    if e <= 0.0 {
        return false;
    }
    let v = sphere.xyz - cam;
    let d = max(sqrt(v.x * v.x + v.y * v.y + v.z * v.z) - sphere.w, 0.0) * scale;
    var ppu: f32;
    if view.orthographic != 0u {
        ppu = view.p11 * view.viewport_height * 0.5;
    } else {
        if d <= 0.0 {
            return true;
        }
        ppu = view.p11 * view.viewport_height * 0.5 / d;
    }
    return e * ppu > view.threshold_px;
}

fn in_frustum(c: vec3<f32>, r: f32) -> bool {
    for (var i = 0u; i < 6u; i++) {
        let p = view.planes[i];
        if p.x * c.x + p.y * c.y + p.z * c.z + p.w < -r {
            return false;
        }
    }
    return true;
}

@compute @workgroup_size(64)
fn cut(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let inst = wg.y + wg.z * view.groups_y;
    if inst >= view.instance_count {
        return;
    }
    let instance = instances[inst];
    let model = models[instance.model];
    let k = wg.x * 64u + lid;
    if k >= model.resident_count {
        return;
    }
    let row = resident[model.resident_start + k];
    let c = clusters[row];
    if view.frustum != 0u {
        let centre = affine(instance.world_from_local, c.sphere.xyz);
        if !in_frustum(centre, c.sphere.w * instance.scale) {
            return;
        }
    }
    let cam = affine(instance.local_from_world, view.camera.xyz);
    var own = c.error;
    if c.level == model.finest_resident {
        own = 0.0;
    }
    if over_threshold(c.sphere, own, cam, instance.scale) {
        return;
    }
    if !over_threshold(c.parent_sphere, c.parent_error, cam, instance.scale) {
        return;
    }
    let at = atomicAdd(&counter[0], 1u);
    if at < view.visible_capacity {
        visible[at] = vec2<u32>(inst, row);
    } else {
        atomicAdd(&counter[1], 1u);
    }
}

// One thread after the cut: the indirect draw of every visible cluster, one
// draw instance per cluster, a cluster slot's vertices per instance.
@compute @workgroup_size(1)
fn finish() {
    draw.vertex_count = 384u;
    draw.instance_count = min(atomicLoad(&counter[0]), view.visible_capacity);
    draw.first_vertex = 0u;
    draw.first_instance = 0u;
}
