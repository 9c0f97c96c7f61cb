"""Back ends on fsspec filesystems (object stores, network mounts)."""
