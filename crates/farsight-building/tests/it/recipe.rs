//! The recipe model: RON round trip and validation errors naming place and rule.

use crate::common::*;
use farsight_building::*;

fn rule_at(b: &Building) -> (String, Rule) {
    match validate(b).unwrap_err() {
        RecipeError::Invalid { at, rule } => (at, rule),
        e => panic!("{e:?}"),
    }
}

#[test]
fn ron_round_trip() {
    let b = sample();
    validate(&b).unwrap();
    let text = b.to_ron();
    assert_eq!(Building::from_ron(&text).unwrap(), b);
}

#[test]
fn syntax_errors_are_typed() {
    assert!(matches!(
        Building::from_ron("Building(id: "),
        Err(RecipeError::Syntax { .. })
    ));
}

#[test]
fn errors_name_the_element_and_the_rule() {
    let mut b = sample();
    b.parts[0].elements[0].cutters[1].geometry = Geometry::Box {
        size: [0.5, -1.0, 0.3],
    };
    let (at, rule) = rule_at(&b);
    assert_eq!(at, "part `wall`, element `wall`, cutter 1");
    assert_eq!(
        rule,
        Rule::NotPositive {
            what: "box size",
            found: -1.0
        }
    );
    let msg = validate(&b).unwrap_err().to_string();
    assert!(
        msg.contains("element `wall`") && msg.contains("must be positive"),
        "{msg}"
    );

    type Break = Box<dyn Fn(&mut Building)>;
    let cases: Vec<(Break, &str, Rule)> = vec![
        (
            Box::new(|b| {
                b.parts[1].elements[0].shape.geometry = Geometry::Cylinder {
                    radius: 0.4,
                    height: 6.0,
                    segments: 2,
                }
            }),
            "part `column`, element `shaft`",
            Rule::Segments { found: 2 },
        ),
        (
            Box::new(|b| b.parts[0].elements[0].union[0].at.translation[0] = f32::NAN),
            "part `wall`, element `wall`, union member 0",
            Rule::NonFinite {
                what: "pose translation",
            },
        ),
        (
            Box::new(|b| {
                b.parts[3].elements[0].shape.geometry = Geometry::ChamferedBox {
                    size: [6.0, 0.3, 6.0],
                    chamfer: 3.0,
                }
            }),
            "part `slab`, element `slab`",
            Rule::Chamfer {
                found: 3.0,
                limit: 3.0,
            },
        ),
        (
            Box::new(|b| {
                b.parts[4].elements[0].shape.geometry = Geometry::Extrusion {
                    polygon: vec![[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]],
                    height: 1.0,
                }
            }),
            "part `crown`, element `crown`",
            Rule::NoArea,
        ),
        (
            Box::new(|b| {
                b.parts[2].elements[1].shape.geometry = Geometry::Revolve {
                    profile: vec![[-0.1, 0.0], [0.1, 0.0], [0.0, 1.0]],
                    segments: 8,
                }
            }),
            "part `interior`, element `lamp`",
            Rule::NegativeRadius { found: -0.1 },
        ),
        (
            Box::new(|b| b.parts[0].elements[1].id = "wall".into()),
            "part `wall`, element `wall`",
            Rule::DuplicateId { id: "wall".into() },
        ),
        (
            Box::new(|b| b.instances[0].part = "tower".into()),
            "instance `w0`",
            Rule::UnknownPart { id: "tower".into() },
        ),
        (
            Box::new(|b| {
                b.instances[0]
                    .overrides
                    .insert("roof".into(), "tin".into())
                    .map(drop)
                    .unwrap_or(())
            }),
            "instance `w0`",
            Rule::UnusedOverride {
                slot: "roof".into(),
            },
        ),
        (
            Box::new(|b| b.merge_groups[0].instances.push("s0".into())),
            "merge group `floors`, instance `s0`",
            Rule::InTwoGroups {
                group: "floors".into(),
            },
        ),
        (
            Box::new(|b| b.instances[7].attachment.as_mut().unwrap().to = "r0".into()),
            "instance `r0`",
            Rule::SelfAttachment,
        ),
        (
            Box::new(|b| b.portals[0].from = "attic".into()),
            "portal `door`",
            Rule::UnknownRoom { id: "attic".into() },
        ),
        (
            Box::new(|b| b.rooms[0].max[1] = -1.0),
            "room `hall`",
            Rule::InvertedRoom,
        ),
        (
            Box::new(|b| b.parts[0].elements[0].binding.clear()),
            "part `wall`, element `wall`",
            Rule::EmptyBinding,
        ),
        (
            Box::new(|b| b.colliders[0].size[2] = 0.0),
            "collider 0 of part `wall`",
            Rule::NotPositive {
                what: "collider size",
                found: 0.0,
            },
        ),
    ];
    for (break_it, at, rule) in cases {
        let mut b = sample();
        break_it(&mut b);
        assert_eq!(rule_at(&b), (at.to_string(), rule));
    }
}

#[test]
fn middle_extent_judges_size() {
    // A sill 3 m long and 20 cm deep is judged 20 cm... by its middle extent.
    let sill = Geometry::Box {
        size: [3.0, 0.1, 0.2],
    };
    assert_eq!(sill.middle_extent(), 0.2);
    // A plate a finger thick but 4 m square stays wide.
    let plate = Geometry::Box {
        size: [4.0, 0.01, 4.0],
    };
    assert_eq!(plate.middle_extent(), 4.0);
    let c = Geometry::Cylinder {
        radius: 0.1,
        height: 5.0,
        segments: 8,
    };
    assert_eq!(c.middle_extent(), 0.2);
}

#[test]
fn both_kits_load_and_make_valid_buildings() {
    for name in ["corporate", "dark-city"] {
        let kit = Kit::builtin(name).unwrap();
        let city = metropolis(&kit, 3, 7);
        assert_eq!(city.len(), 9);
        for b in &city {
            validate(b).unwrap();
        }
        // Varied, and the same again.
        assert!(city
            .iter()
            .any(|b| b.instances.len() != city[0].instances.len()));
        assert_eq!(city, metropolis(&kit, 3, 7));
    }
    assert!(Kit::builtin("nope").is_none());
    assert!(matches!(Kit::from_ron("Kit("), Err(KitError::Syntax(_))));
    let broken =
        farsight_building::kit::CORPORATE.replace("corner: \"corner\"", "corner: \"cornice\"");
    assert!(matches!(
        Kit::from_ron(&broken),
        Err(KitError::Invalid { .. })
    ));
}

/// The corporate kit's text with its `materials` block replaced by `block` (the
/// whole field, or nothing).
fn corporate_with_materials(block: &str) -> String {
    let text = farsight_building::kit::CORPORATE;
    let start = text.find("    materials: {").unwrap();
    let end = start + text[start..].find("\n    },\n").unwrap() + "\n    },\n".len();
    format!("{}{block}{}", &text[..start], &text[end..])
}

#[test]
fn kit_materials_are_described_defaulted_and_checked() {
    // The built-in kits describe every material their palettes name.
    for name in ["corporate", "dark-city"] {
        let kit = Kit::builtin(name).unwrap();
        for m in kit.palette.values() {
            assert!(kit.materials.contains_key(m), "{name}: {m}");
        }
    }
    let corporate = Kit::builtin("corporate").unwrap();
    let glass = corporate.materials["blue-glass"];
    assert_eq!(glass.colour, [0.14, 0.3, 0.52]);
    assert_eq!((glass.roughness, glass.metallic), (0.08, 0.1));
    // A kit without the field describes nothing; a material without roughness,
    // metalness or glow gets the defaults.
    let bare = Kit::from_ron(&corporate_with_materials("")).unwrap();
    assert!(bare.materials.is_empty());
    let short = Kit::from_ron(&corporate_with_materials(
        "    materials: {\"granite\": (colour: (0.5, 0.4, 0.3))},\n",
    ))
    .unwrap();
    assert_eq!(
        short.materials["granite"],
        KitMaterial {
            colour: [0.5, 0.4, 0.3],
            roughness: DEFAULT_ROUGHNESS,
            metallic: 0.0,
            emissive: 0.0,
        }
    );
    // A hand-edited NaN or a value out of range is a typed error naming the field.
    for (entry, want, bad) in [
        (
            "(colour: (0.5, 0.4, 0.3), roughness: NaN)",
            "roughness",
            f32::NAN,
        ),
        ("(colour: (0.5, 0.4, 0.3), metallic: 1.5)", "metallic", 1.5),
        ("(colour: (0.5, -0.1, 0.3))", "colour green", -0.1),
        (
            "(colour: (0.5, 0.4, 0.3), emissive: inf)",
            "emissive",
            f32::INFINITY,
        ),
        (
            "(colour: (0.5, 0.4, 0.3), emissive: -1.0)",
            "emissive",
            -1.0,
        ),
    ] {
        let text = corporate_with_materials(&format!("    materials: {{\"granite\": {entry}}},\n"));
        match Kit::from_ron(&text) {
            Err(KitError::Material {
                kit,
                material,
                field,
                found,
                ..
            }) => {
                assert_eq!((kit.as_str(), material.as_str()), ("corporate", "granite"));
                assert_eq!(field, want, "{entry}");
                assert!(found == bad || (found.is_nan() && bad.is_nan()), "{entry}");
            }
            other => panic!("{entry}: {other:?}"),
        }
    }
    // A description of a material no palette entry wears is a typo, refused.
    let typo =
        corporate_with_materials("    materials: {\"granit\": (colour: (0.5, 0.4, 0.3))},\n");
    assert!(matches!(
        Kit::from_ron(&typo),
        Err(KitError::Invalid { what, .. }) if what.contains("granit")
    ));
    // The cut shade is checked the same way.
    let shade = farsight_building::kit::CORPORATE
        .replace("cut_shade: (0.7, 0.7, 0.72)", "cut_shade: (0.7, NaN, 0.72)");
    assert!(matches!(
        Kit::from_ron(&shade),
        Err(KitError::Invalid { what, .. }) if what.contains("cut_shade")
    ));
}

#[cfg(feature = "bake")]
#[test]
fn full_rotations_are_validated_placed_and_kept_by_files() {
    use farsight_building::bake::{bake, ManifoldKernel};
    let mut b = sample();
    // Column c0 (a 6 m cylinder about +Y) tipped onto its side: pitch 90 about +X.
    let c0 = b.instances.iter().position(|i| i.id == "c0").unwrap();
    b.instances[c0].pose.pitch = 90.0;
    b.instances[c0].pose.roll = 10.0;
    farsight_building::validate(&b).unwrap();
    let text = ron::ser::to_string(&b).unwrap();
    assert_eq!(Building::from_ron(&text).unwrap(), b);
    let mut bad = b.clone();
    bad.instances[c0].pose.roll = f32::INFINITY;
    assert_eq!(rule_at(&bad).1, Rule::NonFinite { what: "pose roll" });
    let baked = bake(&b, &LodPolicy::ladder(), &ManifoldKernel).unwrap();
    let level = baked.level(0).unwrap();
    let piece = level
        .pieces()
        .find(|p| matches!(p.kind, PieceKind::Element { instance: "c0", .. }))
        .unwrap();
    // Lying down: long along Z (pitch turns +Y to +Z), about 0.8 m high.
    let pb = piece.placed_bounds;
    let ext = [0, 1, 2].map(|k| pb.max[k] - pb.min[k]);
    assert!(ext[2] > 5.5 && ext[1] < 2.0, "{ext:?}");
    // The file keeps the pose, and a reader refuses one that is not a rotation.
    let back = BakedBuilding::read_full(&baked.write_full().unwrap()).unwrap();
    assert_eq!(back, baked);
    let mut broken = baked.clone();
    broken.levels[0].placements[c0].pose.pitch = f32::NAN;
    assert!(matches!(
        BakedBuilding::read(&broken.write_full().unwrap()),
        Err(FileError::Structure { level: 0, .. })
    ));
    // A yaw-only pose is written as before (no pitch or roll).
    let plain = ron::ser::to_string(&Pose::yawed([1.0, 0.0, 0.0], 90.0)).unwrap();
    assert!(
        !plain.contains("pitch") && !plain.contains("roll"),
        "{plain}"
    );
}
