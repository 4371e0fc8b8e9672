// farsight terrain: Bevy's StandardMaterial lighting with a base colour blended from
// each vertex's four voxel materials. The vertex carries the material ids in UV_0
// (m0, m1) and UV_1 (m2, m3), constant across a triangle, and their weights in COLOR.

#import bevy_pbr::{
    pbr_fragment::pbr_input_from_standard_material,
    forward_io::{VertexOutput, FragmentOutput},
    pbr_functions::{alpha_discard, apply_pbr_lighting, main_pass_post_lighting_processing},
}

struct TerrainPalette {
    colors: array<vec4<f32>, 8>,
}

@group(#{MATERIAL_BIND_GROUP}) @binding(100)
var<uniform> palette: TerrainPalette;

fn blended(in: VertexOutput) -> vec4<f32> {
    var c = vec4<f32>(1.0, 1.0, 1.0, 1.0);
#ifdef VERTEX_UVS_A
#ifdef VERTEX_UVS_B
#ifdef VERTEX_COLORS
    let ids = vec4<u32>(round(vec4<f32>(in.uv, in.uv_b)));
    let w = in.color;
    var sum = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i = i + 1u) {
        sum = sum + palette.colors[min(ids[i], 7u)] * w[i];
    }
    c = sum / max(w.x + w.y + w.z + w.w, 1e-4);
#endif
#endif
#endif
    return c;
}

@fragment
fn fragment(
    in: VertexOutput,
    @builtin(front_facing) is_front: bool,
) -> FragmentOutput {
    var pbr_input = pbr_input_from_standard_material(in, is_front);
    pbr_input.material.base_color = vec4<f32>(blended(in).rgb, 1.0);
    pbr_input.material.base_color = alpha_discard(pbr_input.material, pbr_input.material.base_color);
    var out: FragmentOutput;
    out.color = apply_pbr_lighting(pbr_input);
    out.color = main_pass_post_lighting_processing(pbr_input, out.color);
    return out;
}
