//! farsight-stream owns what exists in memory, and when (seeds 000 and 003).
