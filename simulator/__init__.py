"""dlscale.simulator"""
