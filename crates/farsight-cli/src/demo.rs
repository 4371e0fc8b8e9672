//! `farsight demo`: seed 000's city block through the visibility pass.

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Number of buildings (the scene scales to 1,000,000 and beyond).
    #[arg(long, default_value_t = 500)]
    pub objects: usize,
    /// Frames to fly the camera along the street.
    #[arg(long, default_value_t = 300)]
    pub frames: u32,
}

pub fn run(_args: DemoArgs) -> Result<(), Box<dyn std::error::Error>> {
    Err("the demo is being written".into())
}
