// Pulling one vertex of a visible cluster from the pools as stored (the
// 32-byte ClusterVertex: unorm16 position codes and flags, octahedral normal and
// tangent, half-float uv sets, RGBA8 colour). Shared by the headless draw
// (draw.wgsl) and the PBR draw (pbr.wgsl); each declares the bindings.

struct Pulled {
    position: vec3<f32>,
    normal: vec3<f32>,
    // xyz direction, w handedness.
    tangent: vec4<f32>,
    uv: vec2<f32>,
    uv1: vec2<f32>,
    color: vec4<f32>,
    level: u32,
}

// farsight-format's oct_decode at 16 bits.
fn oct_decode(word: u32) -> vec3<f32> {
    let q = vec2<f32>(f32(i32(word << 16u) >> 16u), f32(i32(word) >> 16u));
    let inv = 1.0 / 32767.0;
    let x = clamp(q.x * inv, -1.0, 1.0);
    let y = clamp(q.y * inv, -1.0, 1.0);
    let z = 1.0 - abs(x) - abs(y);
    var v = vec3<f32>(x, y, z);
    if z < 0.0 {
        v = vec3<f32>(select(-1.0, 1.0, x >= 0.0) * (1.0 - abs(y)), select(-1.0, 1.0, y >= 0.0) * (1.0 - abs(x)), z);
    }
    return v * (1.0 / sqrt(v.x * v.x + v.y * v.y + v.z * v.z));
}

// Vertex `slot_vertex` of the slot of visible cluster `k`, in model space.
fn pull(k: u32, slot_vertex: u32) -> Pulled {
    return pull_pair(visible[k], slot_vertex);
}

// Vertex `slot_vertex` of the slot of the (instance, cluster row) `pair`.
fn pull_pair(pair: vec2<u32>, slot_vertex: u32) -> Pulled {
    let c = clusters[pair.y];
    let model = models[c.model];
    let v = (c.vertex_base + indices[c.first_index + slot_vertex]) * 8u;
    let w0 = vertices[v];
    let w1 = vertices[v + 1u];
    let code = vec3<f32>(f32(w0 & 0xFFFFu), f32(w0 >> 16u), f32(w1 & 0xFFFFu));
    // dequantize_unorm: min + (q + 0.5) * ((max - min) / 65536).
    let step = (model.bounds_max - model.bounds_min) / 65536.0;
    var out: Pulled;
    out.position = model.bounds_min + (code + 0.5) * step;
    out.normal = oct_decode(vertices[v + 2u]);
    out.tangent = vec4<f32>(oct_decode(vertices[v + 3u]), select(1.0, -1.0, ((w1 >> 16u) & 1u) != 0u));
    out.uv = unpack2x16float(vertices[v + 4u]);
    out.uv1 = unpack2x16float(vertices[v + 5u]);
    out.color = unpack4x8unorm(vertices[v + 6u]);
    out.level = c.level;
    return out;
}
