"""The bundled sample organisation used by `mlcost demo`."""
