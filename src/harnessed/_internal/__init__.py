"""Private helpers shared by the library: clock, lazy imports, GC pause, durability."""
