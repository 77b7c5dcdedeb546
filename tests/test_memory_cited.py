"""Configurations that cited runs trained fit; ones that cannot run are refused.

One memory check (``memory_per_rank``) answers predict and simulate alike: both are
asked here and must agree.
"""

import dataclasses

import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.memory import CUDNN_WORKSPACE, memory_per_rank, memory_range
from dlscale.perfmodel.training.predict import predict
from dlscale.simulator.training.run import simulate_training

# (cluster, model, batch per GPU, precision, source). Every row is a run that trained.
TRAINED = [
    # NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5:
    # README "Training accuracy: NVIDIA DGX-1 (8x V100 16G)", 90 and 250 epochs at
    # "128 (FP32) / 256 (AMP)"; training/FP32/DGX1_RN50_FP32_90E.sh "8 90 128 fp32",
    # training/AMP/DGX1_RN50_AMP_90E.sh "8 90 256 amp".
    ("dgx1-v100", "resnet50", 128, "fp32", "DLE TF RN50 v1.5 DGX-1 16G fp32"),
    ("dgx1-v100", "resnet50", 256, "fp16", "DLE TF RN50 v1.5 DGX-1 16G amp"),
    # The same README's performance table runs 1 GPU of the DGX-1 at the same batches.
    ("pcie-4xv100", "resnet50", 128, "fp32", "DLE TF RN50 v1.5 (16 GB V100, PCIe)"),
    # Goyal et al. 2017 (arXiv 1706.02677): 32 images per P100 (16 GB), fp32.
    ("dgx1-p100", "resnet50", 32, "fp32", "Goyal et al. 2017, 32 per GPU"),
    # TensorFlow r1 benchmarks (DGX-1 P100, 16 GB): batch 64 ResNet-50 / InceptionV3 /
    # VGG16 and 512 AlexNet per GPU, "Training synthetic data".
    ("dgx1-p100", "resnet50", 64, "fp32", "TF benchmarks DGX-1 P100"),
    ("dgx1-p100", "inception-v3", 64, "fp32", "TF benchmarks DGX-1 P100"),
    ("dgx1-p100", "vgg16", 64, "fp32", "TF benchmarks DGX-1 P100"),
    ("dgx1-p100", "alexnet", 512, "fp32", "TF benchmarks DGX-1 P100"),
    # TensorFlow r1 benchmarks, AWS p2.8xlarge (K80, 12 GB per GK210): batch 64.
    ("k80-8gpu", "resnet50", 64, "fp32", "TF benchmarks p2.8xlarge"),
    ("k80-8gpu", "inception-v3", 64, "fp32", "TF benchmarks p2.8xlarge"),
    # The out-of-sample trial's cited runs (validation/holdout/README.md, sources table),
    # each on the catalog machine with its GPU (16 GB P100 PCIe; 16 GB KNL MCDRAM):
    # Horovod docs/benchmarks (2017/2018): batch 64 per Pascal GPU, Inception V3,
    # ResNet-101, VGG-16 (the docs' tf_cnn_benchmarks command).
    ("p100-cluster", "inception-v3", 64, "fp32", "Horovod benchmarks, batch 64 per GPU"),
    ("p100-cluster", "resnet101", 64, "fp32", "Horovod benchmarks, batch 64 per GPU"),
    ("p100-cluster", "vgg16", 64, "fp32", "Horovod benchmarks, batch 64 per GPU"),
    # Akiba et al. 2017 (MN-1, ChainerMN): minibatch 32k over 1,024 P100 PCIe, 32 each.
    ("pcie-8xp100", "resnet50", 32, "fp32", "Akiba et al. 2017, 32 per P100 PCIe"),
    # Dell EMC 2016 (C4130, P100 PCIe): NV-Caffe GoogLeNet batch 128 per GPU (Table 2).
    ("pcie-4xp100", "googlenet", 128, "fp32", "Dell EMC 2016 NV-Caffe, 128 per GPU"),
    # You et al. 2018: batch 32K over 2,048 KNL 7250, 16 per KNL (assumption Y2).
    ("stampede2-knl", "resnet50", 16, "fp32", "You et al. 2018, 16 per KNL"),
]

# Configurations that do not fit a 16 GB V100 in any framework of these runs: the
# DeepLearningExamples scripts halve the fp32 batch to 128 for this reason.
REFUSED = [
    ("dgx1-v100", "resnet50", 256, "fp32"),
    ("dgx1-v100", "resnet50", 512, "fp16"),
    ("dgx1-p100", "vgg16", 256, "fp32"),
]


def _workload(model, batch, precision):
    return dataclasses.replace(get_workload(model), batch_per_device=batch, precision=precision)


@pytest.mark.parametrize("cluster,model,batch,precision,source", TRAINED)
def test_cited_trained_configuration_fits(cluster, model, batch, precision, source):
    c, w = get_cluster(cluster), _workload(model, batch, precision)
    v = memory_per_rank(w, c, c.node.devices_per_node)
    assert bool(v.fits[0]), (source, v.total_bytes[0] / 2**30)
    assert bool(predict(c, w, 1).fits[0])


@pytest.mark.parametrize("cluster,model,batch,precision", REFUSED)
def test_configuration_that_cannot_run_is_refused(cluster, model, batch, precision):
    c, w = get_cluster(cluster), _workload(model, batch, precision)
    assert not bool(memory_per_rank(w, c, c.node.devices_per_node).fits[0])
    assert not bool(predict(c, w, 1).fits[0])


@pytest.mark.parametrize("batch,fits", [(128, True), (256, False)])
def test_predict_and_simulate_give_one_answer(batch, fits):
    # The case: simulate refused ResNet-50 at 128 per 16 GB V100 in fp32
    # (18.3 GiB estimated) while predict answered it.
    c, w = get_cluster("dgx1-v100"), _workload("resnet50", batch, "fp32")
    p = predict(c, w, 1)
    s = simulate_training(c, w, 1, iterations=1)
    assert bool(p.fits[0]) is fits
    assert s.fits is fits
    assert s.memory["per_device_bytes"] == pytest.approx(float(p.memory_per_device_bytes[0]))


def test_range_brackets_central_and_workspace_moves_it():
    c, w = get_cluster("dgx1-v100"), _workload("resnet50", 128, "fp32")
    low, central, high = memory_range(w, c, 8)
    assert low[0] < central[0] < high[0]
    assert central[0] - low[0] == pytest.approx(CUDNN_WORKSPACE.central - CUDNN_WORKSPACE.low)
    # the high end keeps every op's output: the ReLU outputs come back
    assert high[0] > central[0] + (CUDNN_WORKSPACE.high - CUDNN_WORKSPACE.central)


def test_cpu_ranks_hold_no_cudnn_workspace():
    c = get_cluster("cori-knl")
    v = memory_per_rank(get_workload("googlenet"), c, 1)
    assert v.workspace_bytes[0] == 0.0
