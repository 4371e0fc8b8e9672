//! Kits and the metropolis generator (the bench's showcase, docs/design/baked-buildings.md): a kit is a palette and a
//! set of parts sized to one bay and one storey, with the roles the generator places
//! them in; [`metropolis`] makes N x N blocks of varied buildings from a kit.
//! Deterministic: block (i, j) of a seed is always the same building.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::recipe::{Building, ColliderProxy, Instance, MergeGroup, Part, Portal, Pose, Room};
use crate::validate::RecipeError;

/// The corporate kit: chamfered boxes, storey openings, fins, mullions, sills, rails.
pub const CORPORATE: &str = include_str!("../kits/corporate.ron");
/// The dark city: crowns, corner lines, neon signs, lanterns and lamps marked `far`.
pub const DARK_CITY: &str = include_str!("../kits/dark-city.ron");

/// A kit: parts and the roles they play.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kit {
    /// The kit's name, used in messages and building ids.
    pub id: String,
    /// Binding -> material name: what each element binding of the kit's parts wears.
    pub palette: BTreeMap<String, String>,
    /// How each material of the palette looks (keyed by material name, the palette's
    /// values). A material the kit does not describe is left to the renderer.
    #[serde(default)]
    pub materials: BTreeMap<String, KitMaterial>,
    /// Bay width (metres): a facade part spans one bay along its local X, its outer
    /// face at local z = 0 facing +Z.
    pub bay: f32,
    /// Storey height (metres): facade parts span one storey along their local Y.
    pub storey_height: f32,
    /// Facade bays; a building picks one per storey band.
    pub facades: Vec<String>,
    /// Placed at each corner of each storey.
    pub corner: String,
    /// A floor slab of one bay by one bay, centred.
    pub slab: String,
    /// On the roof, centred.
    pub crowns: Vec<String>,
    /// One per storey, at the centre (interior side).
    pub interiors: Vec<String>,
    /// On the ground storey's facade, one per side (signs, lamps).
    pub street: Vec<String>,
    /// Storeys range (inclusive).
    pub storeys: [u32; 2],
    /// Bays per side range (inclusive).
    pub bays: [u32; 2],
    /// Every part the roles name.
    pub parts: Vec<Part>,
    /// Collision proxies of the kit's parts, in part space; a building keeps those of
    /// the parts it uses, and bake places one hull per proxy per instance.
    #[serde(default)]
    pub colliders: Vec<ColliderProxy>,
    /// The street door (width, height): the portal from the ground storey's room to
    /// the outside, centred on the +Z facade. Every storey is a room, and a stair
    /// portal (a `stair` square of slab, centred) joins each to the one above.
    #[serde(default = "default_door")]
    pub door: [f32; 2],
    /// Side (metres) of the square stair portal between storeys.
    #[serde(default = "default_stair")]
    pub stair: f32,
    /// How a renderer shades cut faces (the walls of openings: reveals, jambs, sill
    /// tops): their base colour times this linear RGB factor, each in 0..=1, so an
    /// opening reads as depth in the wall. [`DEFAULT_CUT_SHADE`] when the kit does not
    /// say; `(1.0, 1.0, 1.0)` shades them as the rest of the element.
    #[serde(default = "default_cut_shade")]
    pub cut_shade: [f32; 3],
}

/// How one material of a kit looks, for a metallic-roughness renderer: a base colour
/// and the roughness and metalness of its surface.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitMaterial {
    /// Base colour, sRGB, each channel from 0 to 1.
    pub colour: [f32; 3],
    /// Perceptual roughness from 0 (mirror) to 1 (chalk); [`DEFAULT_ROUGHNESS`] when
    /// not given.
    #[serde(default = "default_roughness")]
    pub roughness: f32,
    /// Metalness from 0 (dielectric) to 1 (metal); 0 when not given.
    #[serde(default)]
    pub metallic: f32,
    /// Light given off, as a multiple of the base colour (0, the default, for none;
    /// signs and lamps glow at a few).
    #[serde(default)]
    pub emissive: f32,
}

/// The roughness of a kit material that does not give one: a matte surface.
pub const DEFAULT_ROUGHNESS: f32 = 0.8;

fn default_roughness() -> f32 {
    DEFAULT_ROUGHNESS
}

impl KitMaterial {
    /// The first field out of range: its name and value. Colour channels, roughness
    /// and metalness are from 0 to 1, emission finite and not negative.
    fn check(&self) -> Result<(), (&'static str, f32)> {
        let unit = |v: f32| v.is_finite() && (0.0..=1.0).contains(&v);
        for (v, name) in self
            .colour
            .iter()
            .zip(["colour red", "colour green", "colour blue"])
        {
            if !unit(*v) {
                return Err((name, *v));
            }
        }
        if !unit(self.roughness) {
            return Err(("roughness", self.roughness));
        }
        if !unit(self.metallic) {
            return Err(("metallic", self.metallic));
        }
        if !(self.emissive.is_finite() && self.emissive >= 0.0) {
            return Err(("emissive", self.emissive));
        }
        Ok(())
    }
}

/// The cut-face shade of a kit that does not give one: a little darker and warmer
/// than the face around it, as the inside of a wall's thickness catches less light.
pub const DEFAULT_CUT_SHADE: [f32; 3] = [0.62, 0.6, 0.57];

fn default_cut_shade() -> [f32; 3] {
    DEFAULT_CUT_SHADE
}

fn default_door() -> [f32; 2] {
    [2.0, 2.5]
}

fn default_stair() -> f32 {
    2.0
}

/// Why a kit was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KitError {
    /// The text did not parse as a kit (the RON parser's message).
    #[error("kit is not valid RON: {0}")]
    Syntax(String),
    /// A role names a missing part, a range is reversed or a size is not positive.
    #[error("kit `{kit}`: {what}")]
    Invalid {
        /// The kit's id.
        kit: String,
        /// The rule broken, in words.
        what: String,
    },
    /// A building made from the kit does not validate.
    #[error("kit `{kit}`: {source}")]
    Recipe {
        /// The kit's id.
        kit: String,
        /// Why the building was refused.
        source: RecipeError,
    },
    /// A field of a material description is out of its range (or not a number).
    #[error("kit `{kit}`, material `{material}`: {field} is {found}, out of its range ({range})")]
    Material {
        /// The kit's id.
        kit: String,
        /// The material's name.
        material: String,
        /// The field out of range.
        field: &'static str,
        /// The value found.
        found: f32,
        /// The range the field must lie in, in words.
        range: &'static str,
    },
}

impl Kit {
    /// Reads and checks a kit: every role names one of its parts, ranges are ordered,
    /// sizes positive, and a building made from it validates.
    pub fn from_ron(text: &str) -> Result<Kit, KitError> {
        let kit: Kit = ron::from_str(text).map_err(|e| KitError::Syntax(e.to_string()))?;
        let bad = |what: String| KitError::Invalid {
            kit: kit.id.clone(),
            what,
        };
        let roles = kit
            .facades
            .iter()
            .chain([&kit.corner, &kit.slab])
            .chain(&kit.crowns)
            .chain(&kit.interiors)
            .chain(&kit.street);
        for r in roles {
            if !kit.parts.iter().any(|p| &p.id == r) {
                return Err(bad(format!(
                    "role names part `{r}`, which the kit does not have"
                )));
            }
        }
        if let Some(c) = kit
            .colliders
            .iter()
            .find(|c| !kit.parts.iter().any(|p| p.id == c.part))
        {
            return Err(bad(format!(
                "a collider names part `{}`, which the kit does not have",
                c.part
            )));
        }
        if !(kit.door.iter().all(|v| *v > 0.0) && kit.stair > 0.0) {
            return Err(bad("door and stair sizes must be positive".into()));
        }
        if !kit
            .cut_shade
            .iter()
            .all(|v| v.is_finite() && (0.0..=1.0).contains(v))
        {
            return Err(bad(format!(
                "cut_shade must be three factors from 0 to 1, found {:?}",
                kit.cut_shade
            )));
        }
        for (name, m) in &kit.materials {
            if !kit.palette.values().any(|v| v == name) {
                return Err(bad(format!(
                    "materials describe `{name}`, which no palette entry wears"
                )));
            }
            if let Err((field, found)) = m.check() {
                return Err(KitError::Material {
                    kit: kit.id.clone(),
                    material: name.clone(),
                    field,
                    found,
                    range: if field == "emissive" {
                        "finite, from 0"
                    } else {
                        "0 to 1"
                    },
                });
            }
        }
        if kit.facades.is_empty() {
            return Err(bad("no facades".into()));
        }
        if !(kit.bay > 0.0 && kit.storey_height > 0.0) {
            return Err(bad("bay and storey_height must be positive".into()));
        }
        if kit.storeys[0] == 0
            || kit.storeys[0] > kit.storeys[1]
            || kit.bays[0] == 0
            || kit.bays[0] > kit.bays[1]
        {
            return Err(bad("storeys and bays are ranges [low, high] from 1".into()));
        }
        let sample = kit.building(0, 0, 0);
        crate::validate(&sample).map_err(|source| KitError::Recipe {
            kit: kit.id.clone(),
            source,
        })?;
        Ok(kit)
    }

    /// A named built-in kit (`corporate`, `dark-city`).
    pub fn builtin(name: &str) -> Option<Kit> {
        let text = match name {
            "corporate" => CORPORATE,
            "dark-city" => DARK_CITY,
            _ => return None,
        };
        Some(Kit::from_ron(text).expect("built-in kits are valid"))
    }

    /// The building of block (i, j) of `seed`, in its own frame (origin at the centre
    /// of its footprint, on the ground).
    pub fn building(&self, i: u32, j: u32, seed: u64) -> Building {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
            seed ^ ((i as u64) << 32 | j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let wide = rng.random_range(self.bays[0]..=self.bays[1]);
        let deep = rng.random_range(self.bays[0]..=self.bays[1]);
        let storeys = rng.random_range(self.storeys[0]..=self.storeys[1]);
        let band = rng.random_range(2..=4u32);
        let facades: Vec<&String> = (0..storeys.div_ceil(band))
            .map(|_| &self.facades[rng.random_range(0..self.facades.len())])
            .collect();
        let shell = Shell {
            wide,
            deep,
            storeys,
            hx: wide as f32 * self.bay / 2.0,
            hz: deep as f32 * self.bay / 2.0,
            h: self.storey_height,
        };
        let mut instances = Vec::new();
        for s in 0..storeys {
            self.place_storey(&shell, s, facades[(s / band) as usize], &mut instances);
        }
        let crown =
            (!self.crowns.is_empty()).then(|| &self.crowns[rng.random_range(0..self.crowns.len())]);
        self.place_roof_and_street(&shell, crown, &mut instances);
        // The ground floor's slabs are one merge group: the podium damage re-meshes.
        let podium: Vec<String> = instances
            .iter()
            .filter(|i| i.id.starts_with("s0."))
            .map(|i| i.id.clone())
            .collect();
        let used: Vec<Part> = self
            .parts
            .iter()
            .filter(|p| instances.iter().any(|i| i.part == p.id))
            .cloned()
            .collect();
        let (rooms, portals) = self.rooms_and_portals(&shell);
        let colliders = self
            .colliders
            .iter()
            .filter(|c| used.iter().any(|p| p.id == c.part))
            .cloned()
            .collect();
        Building {
            id: format!("{}-{i}-{j}", self.id),
            palette: self.palette.clone(),
            parts: used,
            instances,
            merge_groups: vec![MergeGroup {
                id: "podium".into(),
                instances: podium,
            }],
            colliders,
            rooms,
            portals,
        }
    }

    /// Storey `s`'s instances: its facade bays on all four sides, its corners, its
    /// slab tiles and its interior.
    fn place_storey(&self, shell: &Shell, s: u32, facade: &str, out: &mut Vec<Instance>) {
        let Shell {
            wide, deep, hx, hz, ..
        } = *shell;
        let y = s as f32 * shell.h;
        // Sides: +Z (yaw 0), +X (90), -Z (180), -X (270).
        for (side, (n, yaw)) in [(wide, 0.0f32), (deep, 90.0), (wide, 180.0), (deep, 270.0)]
            .into_iter()
            .enumerate()
        {
            let half = n as f32 * self.bay / 2.0;
            let depth = if side % 2 == 0 { hz } else { hx };
            for b in 0..n {
                let along = -half + self.bay * (b as f32 + 0.5);
                let (sin, cos) = yaw.to_radians().sin_cos();
                // Local (along, 0, depth) turned by yaw.
                let t = [along * cos + depth * sin, y, -along * sin + depth * cos];
                place(out, format!("f{s}.{side}.{b}"), facade, t, yaw);
            }
        }
        for (c, (x, z)) in [(-hx, -hz), (hx, -hz), (hx, hz), (-hx, hz)]
            .into_iter()
            .enumerate()
        {
            place(out, format!("k{s}.{c}"), &self.corner, [x, y, z], 0.0);
        }
        self.place_slab(shell, s, out);
        if !self.interiors.is_empty() {
            let part = &self.interiors[(s as usize) % self.interiors.len()];
            place(out, format!("i{s}"), part, [0.0, y, 0.0], 0.0);
        }
    }

    /// The slab tiles at the foot of storey `s` (`s` = the storey count: the roof).
    fn place_slab(&self, shell: &Shell, s: u32, out: &mut Vec<Instance>) {
        let y = s as f32 * shell.h;
        for a in 0..shell.wide {
            for b in 0..shell.deep {
                let x = -shell.hx + self.bay * (a as f32 + 0.5);
                let z = -shell.hz + self.bay * (b as f32 + 0.5);
                place(out, format!("s{s}.{a}.{b}"), &self.slab, [x, y, z], 0.0);
            }
        }
    }

    /// The roof slab tiles, then the crown, then one street part per side.
    fn place_roof_and_street(
        &self,
        shell: &Shell,
        crown: Option<&String>,
        out: &mut Vec<Instance>,
    ) {
        self.place_slab(shell, shell.storeys, out);
        if let Some(crown) = crown {
            let top = [0.0, shell.storeys as f32 * shell.h, 0.0];
            place(out, "crown".into(), crown, top, 0.0);
        }
        for (side, s) in self.street.iter().enumerate().take(4) {
            let yaw = side as f32 * 90.0;
            let depth = if side % 2 == 0 { shell.hz } else { shell.hx };
            let (sin, cos) = yaw.to_radians().sin_cos();
            place(
                out,
                format!("street{side}"),
                s,
                [depth * sin, 0.0, depth * cos],
                yaw,
            );
        }
    }

    /// Every storey is a room; the lobby opens onto the street by its door, and a
    /// stair joins each storey to the one above.
    fn rooms_and_portals(&self, shell: &Shell) -> (Vec<Room>, Vec<Portal>) {
        let Shell {
            storeys, hx, hz, h, ..
        } = *shell;
        let room = |s: u32| {
            if s == 0 {
                "lobby".to_string()
            } else {
                format!("storey{s}")
            }
        };
        let rooms: Vec<Room> = (0..storeys)
            .map(|s| Room {
                id: room(s),
                min: [-hx, s as f32 * h, -hz],
                max: [hx, (s + 1) as f32 * h, hz],
            })
            .collect();
        let [dw, dh] = [self.door[0].min(2.0 * hx), self.door[1].min(h)];
        let mut portals = vec![Portal {
            id: "door".into(),
            from: room(0),
            to: None,
            quad: [
                [-dw / 2.0, 0.0, hz],
                [dw / 2.0, 0.0, hz],
                [dw / 2.0, dh, hz],
                [-dw / 2.0, dh, hz],
            ],
        }];
        let r = self.stair.min(hx).min(hz) / 2.0;
        for s in 1..storeys {
            let y = s as f32 * h;
            portals.push(Portal {
                id: format!("stair{s}"),
                from: room(s - 1),
                to: Some(room(s)),
                quad: [[-r, y, -r], [r, y, -r], [r, y, r], [-r, y, r]],
            });
        }
        (rooms, portals)
    }
}

/// A generated building's size: bays along X (`wide`) and Z (`deep`), storeys, the
/// half extents in metres and the storey height.
#[derive(Clone, Copy)]
struct Shell {
    wide: u32,
    deep: u32,
    storeys: u32,
    hx: f32,
    hz: f32,
    h: f32,
}

/// Adds an instance of `part` at `t`, turned `yaw` degrees about +Y.
fn place(out: &mut Vec<Instance>, id: String, part: &str, t: [f32; 3], yaw: f32) {
    out.push(Instance {
        id,
        part: part.to_string(),
        pose: Pose::yawed(t, yaw),
        attachment: None,
        overrides: BTreeMap::new(),
    });
}

/// N x N blocks of buildings from `kit`, row by row; block (i, j) stands at
/// [`block_origin`].
pub fn metropolis(kit: &Kit, grid: u32, seed: u64) -> Vec<Building> {
    (0..grid)
        .flat_map(|j| (0..grid).map(move |i| (i, j)))
        .map(|(i, j)| kit.building(i, j, seed))
        .collect()
}

/// Where block (i, j) stands in the city: 60 m blocks.
pub fn block_origin(i: u32, j: u32) -> [f32; 3] {
    [i as f32 * 60.0, 0.0, j as f32 * 60.0]
}
