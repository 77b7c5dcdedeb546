"""dlscale.validation"""
