//! farsight-geom
