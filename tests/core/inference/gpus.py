"""Accelerators for the inference tests, written out from vendor datasheets so that these tests pin the
engine's arithmetic independently of the hardware catalog (which tests/catalog checks on its own)."""

from llmplan.core.hardware import GpuSpec, PeakFlops

# NVIDIA H100 SXM5 80GB datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense BF16/FP16, 1979 TFLOPS dense FP8,
# NVLink 900 GB/s bidirectional (450 GB/s each way), PCIe Gen5 64 GB/s each way; reports 81,559 MiB.
H100 = GpuSpec(id="nvidia-h100-sxm-80gb", name="NVIDIA H100 SXM 80GB", vendor="nvidia", memory_bytes=81559 * 2**20,
               memory_bandwidth=3.35e12, peak_flops=PeakFlops(bf16=989e12, fp16=989e12, fp8=1979e12, int8=1979e12),
               nvlink_bandwidth=450e9, pcie_bandwidth=64e9, price_per_hour=3.0)
# NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s, 121 TFLOPS dense FP16/BF16 (242 with sparsity), PCIe Gen4.
L4 = GpuSpec(id="nvidia-l4", name="NVIDIA L4", vendor="nvidia", memory_bytes=23034 * 2**20, memory_bandwidth=300e9,
             peak_flops=PeakFlops(bf16=121e12, fp16=121e12, fp8=242e12), pcie_bandwidth=32e9, price_per_hour=0.8)
# NVIDIA A100 SXM4 80GB datasheet: 2.039 TB/s, 312 TFLOPS dense BF16, NVLink 600 GB/s bidirectional.
A100 = GpuSpec(id="nvidia-a100-sxm-80gb", name="NVIDIA A100 SXM 80GB", vendor="nvidia",
               memory_bytes=81920 * 2**20, memory_bandwidth=2.039e12, peak_flops=PeakFlops(bf16=312e12, fp16=312e12),
               nvlink_bandwidth=300e9, pcie_bandwidth=32e9, price_per_hour=1.8)
# NVIDIA GeForce RTX 4090: 24 GB GDDR6X, 1008 GB/s, 165 TFLOPS dense FP16 with FP32 accumulate (Ada whitepaper).
RTX4090 = GpuSpec(id="nvidia-rtx-4090", name="NVIDIA GeForce RTX 4090", vendor="nvidia", memory_bytes=24564 * 2**20,
                  memory_bandwidth=1008e9, peak_flops=PeakFlops(fp16=165e12, bf16=165e12), pcie_bandwidth=32e9)
# Apple M2 Ultra (Apple newsroom, 2023-06-05): 800 GB/s unified memory, 192 GB, 76-core GPU ~27.2 TFLOPS FP32
# (FP16 runs at the same rate). macOS lets the GPU wire about 75% of memory by default on large machines.
M2_ULTRA = GpuSpec(id="apple-m2-ultra-76c-192gb", name="Apple M2 Ultra (76-core GPU, 192 GB)", vendor="apple",
                   memory_bytes=192 * 10**9, memory_bandwidth=800e9, peak_flops=PeakFlops(fp32=27.2e12, fp16=27.2e12),
                   unified_memory=True, gpu_memory_fraction=0.75)
# Apple M1 Max (Apple newsroom, 2021-10-18): 400 GB/s, 32-core GPU 10.4 TFLOPS FP32, 64 GB.
M1_MAX = GpuSpec(id="apple-m1-max-32c-64gb", name="Apple M1 Max (32-core GPU, 64 GB)", vendor="apple",
                 memory_bytes=64 * 2**30, memory_bandwidth=400e9, peak_flops=PeakFlops(fp32=10.4e12, fp16=10.4e12),
                 unified_memory=True, gpu_memory_fraction=0.75)
# NVIDIA GeForce RTX 4080 (Ada whitepaper): 16 GB GDDR6X, 716.8 GB/s, 97.5 TFLOPS dense FP16 with FP32 accumulate.
RTX4080 = GpuSpec(id="nvidia-rtx-4080", name="NVIDIA GeForce RTX 4080", vendor="nvidia", memory_bytes=16376 * 2**20,
                  memory_bandwidth=716.8e9, peak_flops=PeakFlops(fp16=97.5e12, bf16=97.5e12), pcie_bandwidth=32e9)
# NVIDIA H200 SXM datasheet: 141 GB HBM3e, 4.8 TB/s, same compute as H100 SXM.
H200 = H100.model_copy(update={"id": "nvidia-h200-sxm-141gb", "name": "NVIDIA H200 SXM 141GB",
                               "memory_bytes": 141 * 10**9, "memory_bandwidth": 4.8e12, "price_per_hour": 4.0})
