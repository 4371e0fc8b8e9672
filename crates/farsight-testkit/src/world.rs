//! The world loop's test setup, shared by farsight-world's test programs: an empty
//! recording, and a flight flown with loading screens the way an application flies it.

use std::path::Path;
use std::time::Duration;

use farsight_world::{Flight, FrameInput, FrameReport, Recording, World, WorldConfig};

/// An empty recording of a run over the world in `dir` with `config`.
pub fn recording(dir: &Path, config: WorldConfig) -> Recording {
    Recording {
        world: dir.to_owned(),
        config,
        frames: Vec::new(),
        hashes: Vec::new(),
    }
}

/// Flies the first `frames` frames of `flight`, recording every step's input and
/// hashes in `rec`, and hands each step's report to `each` with whether it was a
/// loading step. The first frame and every teleport show a loading screen: the world
/// steps (waiting a millisecond for I/O between steps, at least three steps, at most
/// 5,000) until it is ready, and panics naming what it waits on if it never is.
pub fn fly(
    world: &mut World,
    flight: &Flight,
    frames: u32,
    rec: &mut Recording,
    each: &mut dyn FnMut(FrameReport, bool),
) {
    let mut input = FrameInput::default();
    for f in 0..frames {
        let ff = flight.frame(f);
        input.camera = ff.camera.to_array();
        input.target = ff.target.to_array();
        input.prefetch = ff.prefetch.map(|p| p.to_array());
        input.edits.clear();
        if f == 0 || ff.teleport {
            input.loading = true;
            for n in 0..5000 {
                let r = world.step(&mut input);
                rec.frames.push(input.clone());
                rec.hashes.push(r.hashes);
                each(r, true);
                if n > 2 && world.ready() {
                    break;
                }
                world.wait_for_io(Duration::from_millis(1));
            }
            assert!(
                world.ready(),
                "frame {f}: the loading screen waits on {:?}",
                world.waiting_on()
            );
        }
        input.loading = false;
        input.edits = ff.edits;
        let r = world.step(&mut input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        each(r, false);
    }
}
