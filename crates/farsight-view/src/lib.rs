//! farsight-view
