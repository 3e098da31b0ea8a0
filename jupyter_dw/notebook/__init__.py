"""The kernel surface: the Python API, live widgets and the ``%dw`` magics, on the kernel's
own core (same pod, same service account; no server extension needed)."""
