// The clusters into a light's shadow map (a directional cascade, a point light's
// cube face, a spot light's map): depth only, vertices pulled from the pools, the
// visible list the camera's cut without its frustum test (so a model outside the
// camera's view still casts).

struct ShadowView {
    clip_from_world: mat4x4<f32>,
    // 1: orthographic (a directional light's cascade): depth in front of the
    // near plane is clamped onto it, as Bevy's shadow pass does.
    orthographic: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> shadow_view: ShadowView;
@group(0) @binding(1) var<storage, read> clusters: array<Cluster>;
@group(0) @binding(2) var<storage, read> models: array<Model>;
@group(0) @binding(3) var<storage, read> instances: array<Instance>;
@group(0) @binding(4) var<storage, read> visible: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> vertices: array<u32>;
@group(0) @binding(6) var<storage, read> indices: array<u32>;

@vertex
fn vertex(@builtin(vertex_index) vi: u32, @builtin(instance_index) k: u32) -> @builtin(position) vec4<f32> {
    let inst = instances[visible[k].x];
    if (inst.flags & 1u) != 0u {
        // Casts no shadow: every vertex on one point, no triangle has area.
        return vec4<f32>(2.0, 2.0, 2.0, 1.0);
    }
    let p = pull(k, vi);
    let world = affine(inst.world_from_local, p.position);
    var clip = shadow_view.clip_from_world * vec4<f32>(world, 1.0);
    if shadow_view.orthographic != 0u {
        clip.z = min(clip.z, clip.w);
    }
    return clip;
}
