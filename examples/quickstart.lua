print("hello from gpulua", gpu.version)
