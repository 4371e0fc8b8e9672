//! The recipe model: RON round trip and validation errors naming place and rule.

mod common;

use common::*;
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
