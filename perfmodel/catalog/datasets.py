"""Training-set sizes (samples per epoch) of the data sets the catalog models use.

Examples
--------
>>> DATASETS["imagenet-1k"]
1281167
"""

from __future__ import annotations

__all__ = ["DATASETS", "DATASET_SOURCES"]

#: Samples in one epoch of each training set.
DATASETS: dict[str, int] = {
    # ILSVRC-2012 training images (Russakovsky et al., IJCV 2015, Table 2: 1,281,167).
    "imagenet-1k": 1_281_167,
    # CIFAR-10 training images (Krizhevsky 2009, "Learning multiple layers of features
    # from tiny images": 50,000 train + 10,000 test).
    "cifar-10": 50_000,
    # MNIST training digits (LeCun et al., yann.lecun.com/exdb/mnist: 60,000 train).
    "mnist": 60_000,
    # WMT'14 English-German training sentence pairs: about 4.5 M (Vaswani et al. 2017,
    # Sec. 5.1: "about 4.5 million sentence pairs"); one sample = one sentence pair.
    "wmt14-en-de": 4_500_000,
    # Laanait et al. 2019 (arXiv 1909.11150): 0.5 PB of simulated CBED data. With the
    # 'fcn-summit' input assumed in models_fcn.py (1024 x 128 x 128 fp16 = 33.6 MB a
    # sample), 0.5e15 / 33.6e6 = 14.9 M samples. Derived, not stated by the paper.
    "cbed-summit": 14_900_000,
}

DATASET_SOURCES: dict[str, str] = {
    "imagenet-1k": "Russakovsky et al. IJCV 2015",
    "cifar-10": "Krizhevsky 2009",
    "mnist": "LeCun et al. MNIST database",
    "wmt14-en-de": "Vaswani et al. 2017, Sec. 5.1",
    "cbed-summit": "derived from Laanait et al. 2019 (0.5 PB) and the assumed sample size",
}
