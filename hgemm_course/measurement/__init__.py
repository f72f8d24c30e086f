"""Running kernels for a number: verification, timing, the vendor libraries, clocks, profiles and the records they write."""
