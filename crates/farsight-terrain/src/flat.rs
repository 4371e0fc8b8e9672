//! Flat-patch reduction for collision meshes: a rectangle of coplanar, regular
//! Surface Nets quads keeps every perimeter vertex and becomes a fan from a new
//! centre vertex, so neighbours that share the perimeter see no T-junction.

use std::collections::HashMap;

use crate::surface_nets::SurfaceNets;

/// A collision triangle mesh with shared vertices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollisionMesh {
    pub vertices: Vec<[f32; 3]>,
    pub indices: Vec<[u32; 3]>,
}

impl CollisionMesh {
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// Flat quads group by (axis, plane coordinate bits, faces +axis).
type GroupKey = (u8, u32, bool);

/// Reduce `sn` (extracted from a field of padded size `dim`) into `out`.
pub(crate) fn reduce_flat(sn: &SurfaceNets, dim: usize, out: &mut CollisionMesh) {
    out.vertices.clear();
    out.indices.clear();
    let nq = sn.quad_count();
    let nv = sn.positions.len();
    let mut uses = vec![0u8; nv];
    for q in 0..nq {
        for v in sn.quad(q) {
            uses[v as usize] = uses[v as usize].saturating_add(1);
        }
    }
    let coords = |v: u32| {
        let b = sn.vertex_base[v as usize] as usize;
        [b % dim, b / dim % dim, b / (dim * dim)]
    };
    // Group flat, regular quads by (axis, plane bits, facing).
    let mut groups: HashMap<GroupKey, Vec<(usize, usize, usize)>> = HashMap::new();
    for q in 0..nq {
        let a = sn.quad_axis[q] as usize;
        let (t1, t2) = ((a + 1) % 3, (a + 2) % 3);
        let vs = sn.quad(q);
        let plane = sn.positions[vs[0] as usize][a].to_bits();
        let regular = vs.iter().all(|&v| {
            let o = sn.vertex_offset[v as usize];
            sn.positions[v as usize][a].to_bits() == plane && o[t1] == 0.5 && o[t2] == 0.5
        });
        if !regular {
            continue;
        }
        // The cube at vs[2] is the quad's emitting cube c; in winding
        // [c-t1-t2, c-t2, c, c-t1] the quad faces +axis, reversed it faces -axis.
        let c = coords(vs[2]);
        let facing_pos = coords(vs[1])[t1] == c[t1];
        groups
            .entry((a as u8, plane, facing_pos))
            .or_default()
            .push((c[t1], c[t2], q));
    }
    let mut reduced = vec![false; nq];
    let mut keep = vec![u32::MAX; nv];
    let mut fans: Vec<([f32; 3], Vec<u32>, bool)> = Vec::new();
    for ((a, _, facing_pos), quads) in &groups {
        let a = *a as usize;
        let (t1, t2) = ((a + 1) % 3, (a + 2) % 3);
        let (umin, vmin) = quads
            .iter()
            .fold((usize::MAX, usize::MAX), |m, &(u, v, _)| {
                (m.0.min(u), m.1.min(v))
            });
        let (umax, vmax) = quads
            .iter()
            .fold((0, 0), |m, &(u, v, _)| (m.0.max(u), m.1.max(v)));
        let (w, h) = (umax - umin + 1, vmax - vmin + 1);
        let mut grid = vec![u32::MAX; w * h];
        for &(u, v, q) in quads {
            grid[(u - umin) + w * (v - vmin)] = q as u32;
        }
        // Vertex of the cube at tangent coords (cu, cv): read from a quad corner.
        let vertex_at = |grid: &[u32], u: usize, v: usize, du: usize, dv: usize| -> u32 {
            // Quad (u, v) has corners at cubes (u-1..u, v-1..v); pick the one at (u-du, v-dv).
            let q = grid[(u - umin) + w * (v - vmin)] as usize;
            *sn.quad(q)
                .iter()
                .find(|&&x| {
                    let c = coords(x);
                    c[t1] + du == u && c[t2] + dv == v
                })
                .expect("a quad's corners cover its four cubes")
        };
        let mut used = vec![false; w * h];
        for v0 in 0..h {
            for u0 in 0..w {
                let i0 = u0 + w * v0;
                if used[i0] || grid[i0] == u32::MAX {
                    continue;
                }
                let free = |u: usize, v: usize| grid[u + w * v] != u32::MAX && !used[u + w * v];
                let mut rw = 1;
                while u0 + rw < w && free(u0 + rw, v0) {
                    rw += 1;
                }
                let mut rh = 1;
                'grow: while v0 + rh < h {
                    for u in u0..u0 + rw {
                        if !free(u, v0 + rh) {
                            break 'grow;
                        }
                    }
                    rh += 1;
                }
                if rw * rh <= rw + rh {
                    continue;
                }
                // Interior vertices must be used by this rectangle's quads only.
                let (gu, gv) = (u0 + umin, v0 + vmin);
                let mut ok = true;
                for v in 1..rh {
                    for u in 1..rw {
                        let x = vertex_at(&grid, gu + u, gv + v, 1, 1);
                        if uses[x as usize] != 4 {
                            ok = false;
                        }
                    }
                }
                if !ok {
                    continue;
                }
                for v in 0..rh {
                    for u in 0..rw {
                        used[u0 + u + w * (v0 + v)] = true;
                        reduced[grid[u0 + u + w * (v0 + v)] as usize] = true;
                    }
                }
                // Perimeter, counter-clockwise in (t1, t2): cube coords from
                // (gu-1, gv-1) to (gu+rw-1, gv+rh-1).
                let mut ring = Vec::with_capacity(2 * (rw + rh));
                let corner = |cu: usize, cv: usize| -> u32 {
                    // Cube (cu, cv) is corner (du, dv) of quad (cu+du, cv+dv) inside the rect.
                    let qu = (cu + 1).min(gu + rw - 1);
                    let qv = (cv + 1).min(gv + rh - 1);
                    vertex_at(&grid, qu, qv, qu - cu, qv - cv)
                };
                for u in 0..rw {
                    ring.push(corner(gu - 1 + u, gv - 1));
                }
                for v in 0..rh {
                    ring.push(corner(gu + rw - 1, gv - 1 + v));
                }
                for u in (1..=rw).rev() {
                    ring.push(corner(gu - 1 + u, gv + rh - 1));
                }
                for v in (1..=rh).rev() {
                    ring.push(corner(gu - 1, gv - 1 + v));
                }
                let (p0, p1) = (
                    sn.positions[ring[0] as usize],
                    sn.positions[ring[rw + rh] as usize],
                );
                let center = [
                    (p0[0] + p1[0]) * 0.5,
                    (p0[1] + p1[1]) * 0.5,
                    (p0[2] + p1[2]) * 0.5,
                ];
                fans.push((center, ring, *facing_pos));
            }
        }
    }
    let mut map = |v: u32, out: &mut CollisionMesh| -> u32 {
        if keep[v as usize] == u32::MAX {
            keep[v as usize] = out.vertices.len() as u32;
            out.vertices.push(sn.positions[v as usize]);
        }
        keep[v as usize]
    };
    for (q, _) in reduced.iter().enumerate().filter(|(_, r)| !**r) {
        let [a, b, c, d] = sn.quad(q).map(|v| map(v, out));
        out.indices.push([a, b, c]);
        out.indices.push([a, c, d]);
    }
    for (center, ring, facing_pos) in fans {
        let ci = out.vertices.len() as u32;
        out.vertices.push(center);
        let ring: Vec<u32> = ring.into_iter().map(|v| map(v, out)).collect();
        for k in 0..ring.len() {
            let (p, n) = (ring[k], ring[(k + 1) % ring.len()]);
            out.indices
                .push(if facing_pos { [ci, p, n] } else { [ci, n, p] });
        }
    }
}
