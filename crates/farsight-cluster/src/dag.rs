//! The load-time view of a cluster-LOD mesh: flat arrays of cluster bounds grouped
//! into DAG groups and levels, built once from the file's level records.

use std::ops::Range;

use farsight_format::{enclosing_sphere, ClusterInfo, ClusterLevel};

/// What the cut needs of one cluster (hot data only; 40 bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterBounds {
    /// Sphere its own error is measured from: centre xyz, radius.
    pub sphere: [f32; 4],
    /// Its own error (model units).
    pub error: f32,
    /// Index of its group in [`ClusterDag::groups`].
    pub group: u32,
    /// Index of the cluster within its level record.
    pub index_in_level: u32,
    /// Its level, 0 the finest.
    pub level: u32,
    /// Triangles in the cluster, from its record.
    pub triangle_count: u32,
    /// The cluster's one material (index into the manifest's `materials`).
    pub material: u32,
}

/// A DAG group: clusters sharing one parent error and sphere.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupNode {
    /// Parent sphere of every cluster in the group.
    pub sphere: [f32; 4],
    /// Parent error of every cluster in the group (`f32::MAX` when none).
    pub error: f32,
    /// The group's clusters in [`ClusterDag::clusters`].
    pub clusters: Range<u32>,
}

/// A level: a sphere around every group sphere and the largest parent error.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelNode {
    /// A sphere around every group sphere of the level: centre xyz, radius.
    pub sphere: [f32; 4],
    /// The level's largest parent error (docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time).
    pub max_parent_error: f32,
    /// The level's groups in [`ClusterDag::groups`].
    pub groups: Range<u32>,
}

/// Why level records do not form a DAG the cut can walk.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DagError {
    /// No level records were given.
    #[error("the mesh has no levels")]
    NoLevels,
    /// A cluster names a group beyond the next unused number, so the level's groups
    /// are not the runs `0, 1, 2, ...` in cluster order.
    #[error("level {level}: cluster {cluster} has group {found}, groups must be numbered in order from 0 (expected {expected_max} at most)")]
    GroupsNotContiguous {
        /// The level, 0 the finest.
        level: usize,
        /// The cluster's index within the level.
        cluster: usize,
        /// The group number it carries.
        found: u32,
        /// The largest group number it could carry there.
        expected_max: u32,
    },
    /// Two clusters of one group carry different parent errors or spheres, so the
    /// cut could draw both sides of a boundary (or neither).
    #[error("level {level} group {group}: clusters disagree on the parent error or sphere")]
    GroupParentMismatch {
        /// The level, 0 the finest.
        level: usize,
        /// The group number within the level.
        group: u32,
    },
    /// A cluster's own error exceeds its group's parent error, which would let the
    /// cut skip a level it must draw.
    #[error("level {level} cluster {cluster}: own error {error} is above its parent error {parent_error}")]
    ErrorNotMonotonic {
        /// The level, 0 the finest.
        level: usize,
        /// The cluster's index within the level.
        cluster: usize,
        /// Its own error, in model units.
        error: f32,
        /// Its group's parent error, in model units.
        parent_error: f32,
    },
}

/// The cluster DAG of one mesh, ready for the cut.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterDag {
    /// Every cluster, level by level (finest first), each level's in group order.
    pub clusters: Vec<ClusterBounds>,
    /// Every group, level by level; each covers a contiguous run of `clusters`.
    pub groups: Vec<GroupNode>,
    /// The levels, finest first; each covers a contiguous run of `groups`.
    pub levels: Vec<LevelNode>,
}

impl ClusterDag {
    /// Builds from parsed level records, finest first.
    pub fn from_levels(levels: &[ClusterLevel<'_>]) -> Result<Self, DagError> {
        let infos: Vec<&[ClusterInfo]> = levels.iter().map(|l| l.clusters).collect();
        Self::from_infos(&infos)
    }

    /// Builds from each level's cluster records, finest first. Clusters of a group
    /// must be contiguous with group ids counting up from 0 in each level.
    pub fn from_infos(levels: &[&[ClusterInfo]]) -> Result<Self, DagError> {
        if levels.is_empty() {
            return Err(DagError::NoLevels);
        }
        let mut dag = ClusterDag::default();
        for (level, infos) in levels.iter().enumerate() {
            let first_group = dag.groups.len() as u32;
            let mut current: Option<u32> = None;
            for (i, info) in infos.iter().enumerate() {
                if info.error > info.parent_error {
                    return Err(DagError::ErrorNotMonotonic {
                        level,
                        cluster: i,
                        error: info.error,
                        parent_error: info.parent_error,
                    });
                }
                let expected_max = current.map_or(0, |g| g + 1);
                match current {
                    Some(g) if g == info.group => {
                        let node = dag.groups.last().expect("group open");
                        if node.sphere != info.parent_sphere || node.error != info.parent_error {
                            return Err(DagError::GroupParentMismatch { level, group: g });
                        }
                    }
                    _ if info.group == expected_max => {
                        current = Some(info.group);
                        let start = dag.clusters.len() as u32;
                        dag.groups.push(GroupNode {
                            sphere: info.parent_sphere,
                            error: info.parent_error,
                            clusters: start..start,
                        });
                    }
                    _ => {
                        return Err(DagError::GroupsNotContiguous {
                            level,
                            cluster: i,
                            found: info.group,
                            expected_max,
                        })
                    }
                }
                dag.clusters.push(ClusterBounds {
                    sphere: info.sphere,
                    error: info.error,
                    group: dag.groups.len() as u32 - 1,
                    index_in_level: i as u32,
                    level: level as u32,
                    triangle_count: u32::from(info.triangle_count),
                    material: u32::from(info.material),
                });
                dag.groups.last_mut().expect("group open").clusters.end = dag.clusters.len() as u32;
            }
            let groups = first_group..dag.groups.len() as u32;
            let spheres: Vec<[f32; 4]> = dag.groups[groups.start as usize..groups.end as usize]
                .iter()
                .map(|g| g.sphere)
                .collect();
            let max_parent_error = dag.groups[groups.start as usize..groups.end as usize]
                .iter()
                .fold(0.0f32, |m, g| m.max(g.error));
            dag.levels.push(LevelNode {
                sphere: enclosing_sphere(&spheres),
                max_parent_error,
                groups,
            });
        }
        Ok(dag)
    }

    /// The largest parent error of each level, finest first: the input of
    /// [`crate::model_levels`].
    pub fn level_max_parent_errors(&self) -> Vec<f32> {
        self.levels.iter().map(|l| l.max_parent_error).collect()
    }
}
