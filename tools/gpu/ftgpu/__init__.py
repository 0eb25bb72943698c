"""What the GPU checks and benchmarks of tools/gpu share, each once: the
float64 attention reference (reference.py), the accuracy rules
(tolerance.py) and the timing (timing.py). The scripts next to this package
import it as `ftgpu` (their folder is on sys.path when they run)."""
