"""dlscale.kernels"""
