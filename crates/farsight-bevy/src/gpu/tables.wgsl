// The GPU tables the cut and the draw share (src/gpu/layout.rs, cut.rs).

struct Cluster {
    sphere: vec4<f32>,
    parent_sphere: vec4<f32>,
    error: f32,
    parent_error: f32,
    model: u32,
    triangles_material: u32,
    first_index: u32,
    vertex_base: u32,
    level: u32,
    index_in_level: u32,
}

struct Model {
    bounds_min: vec3<f32>,
    finest_resident: u32,
    bounds_max: vec3<f32>,
    resident_start: u32,
    resident_count: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// Affine rows: p' = (dot(r0.xyz, p) + r0.w, ...).
struct Instance {
    world_from_local: array<vec4<f32>, 3>,
    local_from_world: array<vec4<f32>, 3>,
    model: u32,
    scale: f32,
    // The material slot drawing every cluster of the instance (the user's), or
    // NO_MATERIAL: each cluster's own file material.
    material: u32,
    // Bit 0: casts no shadow.
    flags: u32,
}

const NO_MATERIAL: u32 = 0xFFFFFFFFu;

fn affine(r: array<vec4<f32>, 3>, p: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        r[0].x * p.x + r[0].y * p.y + r[0].z * p.z + r[0].w,
        r[1].x * p.x + r[1].y * p.y + r[1].z * p.z + r[1].w,
        r[2].x * p.x + r[2].y * p.y + r[2].z * p.z + r[2].w,
    );
}

