"""Registry of the built-in models, by name.

Every model is built layer by layer from its published geometry (see
``models_cnn``, ``models_resnet``, ``models_inception``, ``models_transformer`` and
``models_fcn``); parameter and FLOP totals are sums over the layers.

Examples
--------
>>> sorted(MODELS)[:3]
['alexnet', 'alexnet-cifar10', 'cifar10-net']
>>> MODELS["resnet50"].params
25557032
"""

from __future__ import annotations

from collections.abc import Callable

from dlscale.perfmodel.catalog.models_cnn import (
    alexnet,
    alexnet_cifar10,
    cifar10_net,
    lenet,
    vgg16,
    vgg19,
)
from dlscale.perfmodel.catalog.models_fcn import fcn_summit
from dlscale.perfmodel.catalog.models_inception import googlenet, inception_v3
from dlscale.perfmodel.catalog.models_resnet import resnet50, resnet101
from dlscale.perfmodel.catalog.models_transformer import transformer_base, transformer_big
from dlscale.perfmodel.training.workload import Model

__all__ = ["MODELS", "MODEL_BUILDERS"]

#: Name -> function that builds the model.
MODEL_BUILDERS: dict[str, Callable[[], Model]] = {
    "lenet": lenet,
    "cifar10-net": cifar10_net,
    "alexnet": alexnet,
    "alexnet-cifar10": alexnet_cifar10,
    "googlenet": googlenet,
    "vgg16": vgg16,
    "vgg19": vgg19,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "inception-v3": inception_v3,
    "transformer-big": transformer_big,
    "transformer-base": transformer_base,
    "fcn-summit": fcn_summit,
}

#: Name -> model (frozen dataclasses, built once at import).
MODELS: dict[str, Model] = {name: build() for name, build in MODEL_BUILDERS.items()}
