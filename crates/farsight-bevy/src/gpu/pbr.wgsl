// The vertex stage of the PBR draw: pulls the vertices of one material slot's
// visible clusters from the pools and hands Bevy's PBR fragment shader
// (bevy_pbr's pbr.wgsl, the StandardMaterial's own) the VertexOutput a mesh
// would, with the transforms bevy_pbr's mesh functions apply. Under Bevy's
// prepass pipeline (PREPASS_PIPELINE, src/gpu/prepass.rs) the same stage hands
// the StandardMaterial's prepass fragment shader its prepass VertexOutput: the
// same clip position, so the main pass's equal depth test passes.
#ifdef PREPASS_PIPELINE
#import bevy_pbr::prepass_io::VertexOutput
#else
#import bevy_pbr::forward_io::VertexOutput
#endif
#import bevy_pbr::view_transformations::position_world_to_clip

// Group 2 binding 0 is bevy_pbr's `mesh` array (one record, read by the
// fragment stage for its flags).
@group(2) @binding(1) var<storage, read> clusters: array<Cluster>;
@group(2) @binding(2) var<storage, read> models: array<Model>;
@group(2) @binding(3) var<storage, read> instances: array<Instance>;
// The visible clusters sorted by slot.
@group(2) @binding(4) var<storage, read> visible: array<vec2<u32>>;
@group(2) @binding(5) var<storage, read> vertices: array<u32>;
@group(2) @binding(6) var<storage, read> indices: array<u32>;
// Counts, starts and cursors of the slots (bins.wgsl).
@group(2) @binding(7) var<storage, read> bins: array<u32>;

struct DrawSlot {
    slot: u32,
    slot_count: u32,
    // 1: colour each cluster by its level.
    tint_levels: u32,
    pad: u32,
}
@group(2) @binding(8) var<uniform> draw: DrawSlot;

#ifdef PREPASS_PIPELINE
#ifdef MOTION_VECTOR_PREPASS
// Per instance slot the affine rows of its transform on the frame before
// (src/gpu/prepass.rs, PreviousRows), in the group Bevy's prepass leaves empty.
@group(1) @binding(0) var<storage, read> previous_rows: array<array<vec4<f32>, 3>>;
#endif
#endif

@vertex
fn vertex(@builtin(vertex_index) vi: u32, @builtin(instance_index) i: u32) -> VertexOutput {
    let pair = visible[bins[draw.slot_count + draw.slot] + i];
    let p = pull_pair(pair, vi);
    let inst = instances[pair.x];
    let w = inst.world_from_local;
    let l = inst.local_from_world;
    let world = affine(w, p.position);
    var out: VertexOutput;
    out.world_position = vec4<f32>(world, 1.0);
    out.position = position_world_to_clip(world);
    // The inverse transpose for normals, as mesh_normal_local_to_world.
    let world_normal = normalize(l[0].xyz * p.normal.x + l[1].xyz * p.normal.y + l[2].xyz * p.normal.z);
#ifdef PREPASS_PIPELINE
#ifdef NORMAL_PREPASS_OR_DEFERRED_PREPASS
    out.world_normal = world_normal;
#endif
#ifdef MOTION_VECTOR_PREPASS
    // Where the vertex was on the frame before, as Bevy's prepass does with its
    // mesh's previous_world_from_local.
    out.previous_world_position = vec4<f32>(affine(previous_rows[pair.x], p.position), 1.0);
#endif
#else
    out.world_normal = world_normal;
#endif
#ifdef VERTEX_UVS_A
    out.uv = p.uv;
#endif
#ifdef VERTEX_UVS_B
    out.uv_b = p.uv1;
#endif
#ifdef VERTEX_TANGENTS
    let t = p.tangent.xyz;
    let det = dot(cross(w[0].xyz, w[1].xyz), w[2].xyz);
    out.world_tangent = vec4<f32>(
        normalize(vec3<f32>(dot(w[0].xyz, t), dot(w[1].xyz, t), dot(w[2].xyz, t))),
        p.tangent.w * select(1.0, -1.0, det < 0.0),
    );
#endif
#ifdef VERTEX_COLORS
    out.color = p.color;
    if draw.tint_levels != 0u {
        var tints = array<vec3<f32>, 6>(
            vec3<f32>(0.2, 0.8, 0.2), vec3<f32>(0.9, 0.8, 0.1), vec3<f32>(0.9, 0.2, 0.2),
            vec3<f32>(0.2, 0.4, 0.9), vec3<f32>(0.8, 0.3, 0.9), vec3<f32>(0.2, 0.8, 0.9),
        );
        out.color = vec4<f32>(tints[p.level % 6u], 1.0);
    }
#endif
#ifdef VERTEX_OUTPUT_INSTANCE_INDEX
    // The one record of the `mesh` array.
    out.instance_index = 0u;
#endif
    return out;
}
