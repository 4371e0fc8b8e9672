//! farsight-lod
