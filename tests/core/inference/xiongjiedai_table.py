"""One widely cited public llama.cpp table on NVIDIA cards, transcribed, and how llmplan estimates each cell.

Source: XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README.md at commit aa72e0e (2024-05-12), sections "NVIDIA
Gaming GPUs" and "NVIDIA Professional GPUs" (snapshots of May 2024 on RunPod: Ubuntu 22.04, CUDA 12.1.1). Every
run is ``llama-bench -p 512,1024,4096,8192 -n 512,1024,4096,8192`` with the defaults of that build: all layers
on the GPU (-ngl 99), n_batch 2048, n_ubatch 512 (but the three cells in ``UBATCH``), an F16 KV cache, no flash
attention, and several cards split by layers (--split-mode layer). The notebooks beside the README print the build: ``build: e8496488 (2843)``
(llama.cpp b2843, 2024-05-10), with ``GGML_CUDA_FORCE_MMQ: no`` and ``CUDA_USE_TENSOR_CORES: yes``.
Models: Meta-Llama-3-8B and -70B, GGUF Q4_K_M and F16 (4.58 / 14.96 GiB and 39.59 / 131.42 GiB in the README).

``tgN``: N tokens generated from an empty cache (mean context N/2); ``ppN``: one N-token prompt. ``None``:
the README's "OOM" (the run did not fit). The Apple rows of the same table are left to the Apple tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

SOURCE = ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (aa72e0e, 2024-05-12), llama-bench, "
          "llama.cpp b2843 (e8496488), CUDA 12.1")
TOKENS = (512, 1024, 4096, 8192)  # the tg / pp columns, in order

# card id, cards in the machine, model, GGUF type, (tg512, tg1024, tg4096, tg8192), (pp512, ... pp8192)
ROWS = (
    ("nvidia-rtx-3070-8gb", 1, "8B", "Q4_K_M", (72.79, 70.94, 67.01, 61.64), (2402.51, 2283.62, 1826.59, 1419.97)),
    ("nvidia-rtx-3080-10gb", 1, "8B", "Q4_K_M", (109.57, 106.40, 98.67, 89.90), (3728.86, 3557.02, 2852.06, 2232.21)),
    ("nvidia-rtx-3080-ti-12gb", 1, "8B", "Q4_K_M", (110.60, 106.71, 98.34, 88.63), (3690.30, 3556.67, 2947.11, 2381.52)),
    ("nvidia-rtx-4070-ti-12gb", 1, "8B", "Q4_K_M", (83.50, 82.21, 78.59, 73.46), (3936.29, 3653.07, 2729.71, 2019.71)),
    ("nvidia-rtx-4080-16gb", 1, "8B", "Q4_K_M", (108.15, 106.22, 100.44, 93.71), (5389.74, 5064.99, 3790.96, 2882.03)),
    ("nvidia-rtx-4080-16gb", 1, "8B", "F16", (40.58, 40.29, 39.44, None), (7246.97, 6758.90, 4720.22, None)),
    ("nvidia-rtx-3090-24gb", 1, "8B", "Q4_K_M", (115.42, 111.74, 97.31, 87.49), (4030.40, 3865.39, 3169.91, 2527.40)),
    ("nvidia-rtx-3090-24gb", 1, "8B", "F16", (47.40, 46.51, 44.79, 42.62), (4444.65, 4239.64, 3410.47, 2667.14)),
    ("nvidia-rtx-4090-24gb", 1, "8B", "Q4_K_M", (130.58, 127.74, 119.44, 110.66), (7138.99, 6898.71, 5265.68, 4039.68)),
    ("nvidia-rtx-4090-24gb", 1, "8B", "F16", (54.84, 54.34, 52.63, 50.88), (9382.00, 9056.26, 6531.36, 4744.18)),
    ("nvidia-rtx-3090-24gb", 2, "8B", "Q4_K_M", (111.67, 108.07, 99.60, 90.77), (3336.37, 4004.14, 4013.34, 3433.59)),
    ("nvidia-rtx-3090-24gb", 2, "8B", "F16", (47.72, 47.15, 45.56, 43.61), (4122.66, 4690.50, 4788.60, 3851.37)),
    ("nvidia-rtx-3090-24gb", 2, "70B", "Q4_K_M", (16.57, 16.29, 15.36, 14.34), (357.32, 393.89, 379.52, 338.82)),
    ("nvidia-rtx-4090-24gb", 2, "8B", "Q4_K_M", (124.65, 122.56, 114.32, 106.18), (7003.51, 8545.00, 8422.04, 6895.68)),
    ("nvidia-rtx-4090-24gb", 2, "8B", "F16", (53.64, 53.27, 51.64, 49.83), (9177.92, 11094.51, 10329.29, 8067.29)),
    ("nvidia-rtx-4090-24gb", 2, "70B", "Q4_K_M", (19.22, 19.06, 18.54, 17.92), (839.43, 905.38, 846.38, 723.24)),
    ("nvidia-rtx-3090-24gb", 4, "8B", "Q4_K_M", (108.66, 104.94, 97.09, 88.35), (3742.66, 4653.93, 5826.91, 4913.40)),
    ("nvidia-rtx-3090-24gb", 4, "8B", "F16", (47.07, 46.40, 44.76, 42.81), (4608.40, 5713.41, 6596.17, 5361.52)),
    ("nvidia-rtx-3090-24gb", 4, "70B", "Q4_K_M", (17.07, 16.89, 16.24, 15.39), (300.79, 350.06, 367.75, 331.37)),
    ("nvidia-rtx-4090-24gb", 4, "8B", "Q4_K_M", (120.32, 117.61, 110.52, 103.13), (6748.96, 9609.29, 12491.10, 10993.75)),
    ("nvidia-rtx-4090-24gb", 4, "8B", "F16", (53.10, 52.69, 51.00, 49.21), (8750.57, 12304.19, 15143.84, 12919.74)),
    ("nvidia-rtx-4090-24gb", 4, "70B", "Q4_K_M", (19.80, 18.83, 18.35, 17.66), (834.74, 898.17, 839.97, 718.01)),
    ("nvidia-rtx-3090-24gb", 6, "8B", "Q4_K_M", (104.17, 101.07, 94.06, 85.93), (3359.99, 5153.05, 7690.65, 7084.44)),
    ("nvidia-rtx-3090-24gb", 6, "8B", "F16", (46.23, 45.55, 43.99, 42.15), (3875.97, 5952.55, 9437.91, 8780.49)),
    ("nvidia-rtx-3090-24gb", 6, "70B", "Q4_K_M", (17.09, 16.93, 16.32, 15.45), (456.95, 739.40, 786.79, 695.44)),
    ("nvidia-rtx-3090-24gb", 6, "70B", "F16", (5.85, 5.82, 5.76, 5.53), (579.00, 927.23, 998.79, 813.99)),
    ("nvidia-rtx-4090-24gb", 8, "8B", "Q4_K_M", (118.09, 116.13, 108.37, 100.95), (6172.06, 9706.82, 15089.45, 13802.08)),
    ("nvidia-rtx-4090-24gb", 8, "8B", "F16", (52.51, 52.12, 50.39, 48.72), (7889.26, 11818.92, 16462.18, 14300.98)),
    ("nvidia-rtx-4090-24gb", 8, "70B", "Q4_K_M", (18.94, 18.76, 18.23, 17.57), (812.95, 1336.26, 1488.36, 1320.36)),
    ("nvidia-rtx-4090-24gb", 8, "70B", "F16", (6.47, 6.45, 6.39, 6.31), (1183.87, 1890.48, 2311.43, 1995.85)),
    ("nvidia-rtx-4000-ada-20gb", 1, "8B", "Q4_K_M", (59.15, 58.59, 55.94, 52.39), (2451.93, 2310.53, 1798.01, 1337.15)),
    ("nvidia-rtx-4000-ada-20gb", 1, "8B", "F16", (20.92, 20.85, 20.50, 20.01), (3121.67, 2951.87, 2200.58, 1557.00)),
    ("nvidia-rtx-5000-ada-32gb", 1, "8B", "Q4_K_M", (91.39, 89.87, 85.01, 80.00), (4761.12, 4467.46, 3272.94, 2422.33)),
    ("nvidia-rtx-5000-ada-32gb", 1, "8B", "F16", (32.84, 32.67, 32.04, 31.27), (6160.57, 5835.41, 4008.30, 2808.89)),
    ("nvidia-rtx-a6000-48gb", 1, "8B", "Q4_K_M", (105.39, 102.22, 94.82, 86.73), (3780.55, 3621.81, 2917.23, 2292.61)),
    ("nvidia-rtx-a6000-48gb", 1, "8B", "F16", (40.71, 40.25, 39.14, 37.73), (4511.02, 4315.18, 3365.79, 2566.46)),
    ("nvidia-rtx-a6000-48gb", 1, "70B", "Q4_K_M", (14.71, 14.58, 14.09, 13.42), (482.19, 466.82, 404.61, 340.73)),
    ("nvidia-rtx-6000-ada-48gb", 1, "8B", "Q4_K_M", (133.44, 130.99, 120.74, 111.57), (5791.74, 5560.94, 4495.19, 3542.57)),
    ("nvidia-rtx-6000-ada-48gb", 1, "8B", "F16", (52.32, 51.97, 50.21, 48.79), (6663.13, 6205.44, 4969.46, 3915.81)),
    ("nvidia-rtx-6000-ada-48gb", 1, "70B", "Q4_K_M", (18.52, 18.36, 17.80, 16.97), (565.98, 547.03, 481.59, 419.76)),
    ("nvidia-a40-48gb", 1, "8B", "Q4_K_M", (91.27, 88.95, 83.10, 76.45), (3324.98, 3240.95, 2586.50, 2013.34)),
    ("nvidia-a40-48gb", 1, "8B", "F16", (34.26, 33.95, 33.06, 31.93), (4203.75, 4043.05, 3069.98, 2295.02)),
    ("nvidia-a40-48gb", 1, "70B", "Q4_K_M", (11.60, 12.08, 11.68, 11.26), (209.38, 239.92, 268.89, 291.13)),
    ("nvidia-l40s-48gb", 1, "8B", "Q4_K_M", (115.55, 113.60, 105.50, 97.98), (6035.24, 5908.52, 4335.18, 3192.70)),
    ("nvidia-l40s-48gb", 1, "8B", "F16", (43.69, 43.42, 42.22, 41.05), (2253.93, 2491.65, 2887.70, 3312.16)),
    ("nvidia-l40s-48gb", 1, "70B", "Q4_K_M", (15.46, 15.31, 14.92, 14.45), (673.63, 649.08, 542.29, 446.48)),
    ("nvidia-rtx-4000-ada-20gb", 4, "8B", "Q4_K_M", (56.64, 56.14, 53.58, 50.19), (2413.07, 3369.24, 4404.45, 3733.15)),
    ("nvidia-rtx-4000-ada-20gb", 4, "8B", "F16", (20.65, 20.58, 20.24, 19.74), (3220.21, 4366.64, 5366.39, 4323.70)),
    ("nvidia-rtx-4000-ada-20gb", 4, "70B", "Q4_K_M", (7.36, 7.33, 7.12, 6.84), (282.28, 306.44, 290.70, 243.45)),
    ("nvidia-a100-pcie-80gb", 1, "8B", "Q4_K_M", (140.62, 138.31, 127.22, 117.60), (5981.04, 5800.48, 4959.84, 4083.37)),
    ("nvidia-a100-pcie-80gb", 1, "8B", "F16", (54.84, 54.56, 53.02, 51.24), (7741.34, 7504.24, 6137.54, 4849.11)),
    ("nvidia-a100-pcie-80gb", 1, "70B", "Q4_K_M", (22.31, 22.11, 20.93, 19.53), (744.12, 726.65, 653.20, 573.95)),
    ("nvidia-a100-sxm4-80gb", 1, "8B", "Q4_K_M", (135.04, 133.38, 125.09, 115.92), (5947.64, 5863.92, 5121.60, 4137.08)),
    ("nvidia-a100-sxm4-80gb", 1, "8B", "F16", (53.49, 53.18, 52.03, 50.52), (603.76, 681.47, 866.13, 1323.07)),
    ("nvidia-a100-sxm4-80gb", 1, "70B", "Q4_K_M", (24.61, 24.33, 22.91, 21.32), (817.58, 796.81, 714.07, 625.66)),
    ("nvidia-h100-pcie-80gb", 1, "8B", "Q4_K_M", (145.55, 144.49, 136.06, 126.83), (8125.45, 7760.16, 6423.31, 5185.03)),
    ("nvidia-h100-pcie-80gb", 1, "8B", "F16", (68.03, 67.79, 65.97, 63.55), (10815.51, 10342.63, 8106.53, 6191.45)),
    ("nvidia-h100-pcie-80gb", 1, "70B", "Q4_K_M", (25.03, 25.01, 23.82, 22.39), (1012.73, 984.06, 863.37, 741.52)),
    ("nvidia-rtx-5000-ada-32gb", 4, "8B", "Q4_K_M", (84.07, 82.73, 78.45, 74.11), (4671.34, 6530.78, 8004.94, 6790.82)),
    ("nvidia-rtx-5000-ada-32gb", 4, "8B", "F16", (32.10, 31.94, 31.32, 30.58), (2427.96, 2877.66, 3836.89, 5235.00)),
    ("nvidia-rtx-5000-ada-32gb", 4, "70B", "Q4_K_M", (11.51, 11.45, 11.24, 10.94), (502.37, 541.54, 504.23, 424.29)),
    ("nvidia-rtx-a6000-48gb", 4, "8B", "Q4_K_M", (96.48, 93.73, 87.72, 80.88), (3712.99, 5340.10, 7126.45, 6438.82)),
    ("nvidia-rtx-a6000-48gb", 4, "8B", "F16", (39.34, 38.87, 37.81, 36.51), (4508.60, 6448.85, 8327.16, 7298.18)),
    ("nvidia-rtx-a6000-48gb", 4, "70B", "Q4_K_M", (14.44, 14.32, 13.91, 13.32), (496.08, 539.20, 511.22, 434.31)),
    ("nvidia-rtx-a6000-48gb", 4, "70B", "F16", (4.76, 4.74, 4.70, 4.63), (510.31, 792.23, 751.37, 748.06)),
    ("nvidia-rtx-6000-ada-48gb", 4, "8B", "Q4_K_M", (121.21, 118.99, 110.65, 103.18), (6640.86, 9679.55, 11734.85, 10278.14)),
    ("nvidia-rtx-6000-ada-48gb", 4, "8B", "F16", (50.61, 50.25, 48.69, 47.18), (8953.30, 12637.94, 13971.34, 11702.36)),
    ("nvidia-rtx-6000-ada-48gb", 4, "70B", "Q4_K_M", (18.13, 17.96, 17.49, 16.89), (656.61, 714.93, 697.10, 612.54)),
    ("nvidia-rtx-6000-ada-48gb", 4, "70B", "F16", (6.08, 6.06, 6.01, 5.94), (864.12, 1270.39, 1363.75, 1182.28)),
    ("nvidia-a40-48gb", 4, "8B", "Q4_K_M", (85.91, 83.79, 78.56, 72.70), (3321.27, 4841.98, 6442.38, 5742.84)),
    ("nvidia-a40-48gb", 4, "8B", "F16", (33.60, 33.28, 32.42, 31.38), (4144.88, 5931.06, 7544.92, 6516.60)),
    ("nvidia-a40-48gb", 4, "70B", "Q4_K_M", (11.99, 11.91, 11.60, 11.17), (236.86, 263.36, 300.57, 312.31)),
    ("nvidia-a40-48gb", 4, "70B", "F16", (3.99, 3.98, 3.95, 3.90), (610.51, 900.79, 893.28, 735.16)),
    ("nvidia-l40s-48gb", 4, "8B", "Q4_K_M", (107.53, 105.72, 98.59, 92.20), (6125.69, 9008.27, 10566.97, 9017.90)),
    ("nvidia-l40s-48gb", 4, "8B", "F16", (42.70, 42.48, 41.33, 40.19), (2211.45, 2541.61, 3093.33, 4336.81)),
    ("nvidia-l40s-48gb", 4, "70B", "Q4_K_M", (15.12, 14.99, 14.63, 14.17), (591.05, 634.05, 605.66, 541.67)),
    ("nvidia-l40s-48gb", 4, "70B", "F16", (5.05, 5.03, 4.99, 4.94), (1042.13, 1478.83, 1427.77, 1150.63)),
    ("nvidia-a100-pcie-80gb", 4, "8B", "Q4_K_M", (119.28, 117.30, 110.75, 103.87), (6076.58, 8889.35, 12724.54, 11803.39)),
    ("nvidia-a100-pcie-80gb", 4, "8B", "F16", (51.63, 51.54, 50.20, 48.73), (8088.79, 11670.74, 16025.11, 14269.17)),
    ("nvidia-a100-pcie-80gb", 4, "70B", "Q4_K_M", (22.91, 22.68, 21.41, 19.96), (771.28, 978.06, 1138.60, 1043.15)),
    ("nvidia-a100-pcie-80gb", 4, "70B", "F16", (7.40, 7.38, 7.23, 7.06), (1172.14, 1733.41, 1846.36, 1592.37)),
    ("nvidia-a100-sxm4-80gb", 4, "8B", "Q4_K_M", (99.73, 97.70, 92.09, 86.27), (4850.88, 7782.25, 12242.53, 11535.66)),
    ("nvidia-a100-sxm4-80gb", 4, "8B", "F16", (45.53, 45.45, 44.33, 43.09), (626.75, 674.11, 1003.37, 1612.05)),
    ("nvidia-a100-sxm4-80gb", 4, "70B", "Q4_K_M", (19.87, 19.60, 18.48, 17.19), (468.86, 539.08, 712.08, 802.23)),
    ("nvidia-a100-sxm4-80gb", 4, "70B", "F16", (6.95, 6.92, 6.77, 6.58), (1233.31, 1834.16, 1972.48, 1699.56)),
    ("nvidia-h100-pcie-80gb", 4, "8B", "Q4_K_M", (123.08, 118.14, 113.12, 110.34), (8054.58, 11560.23, 16128.27, 14682.97)),
    ("nvidia-h100-pcie-80gb", 4, "8B", "F16", (64.00, 62.90, 61.45, 59.72), (11107.40, 15612.81, 20561.03, 17762.96)),
    ("nvidia-h100-pcie-80gb", 4, "70B", "Q4_K_M", (26.40, 26.20, 24.60, 23.68), (1048.29, 1133.23, 1088.99, 950.92)),
    ("nvidia-h100-pcie-80gb", 4, "70B", "F16", (9.67, 9.63, 9.46, 9.23), (1681.45, 2420.10, 2437.53, 2031.77)),
)

# Combinations the README's overview marks "OOM" (at its 1024-token columns) that have no row above.
SMALL = ("nvidia-rtx-3070-8gb", "nvidia-rtx-3080-10gb", "nvidia-rtx-3080-ti-12gb", "nvidia-rtx-4070-ti-12gb")
MID = ("nvidia-rtx-4080-16gb", "nvidia-rtx-4000-ada-20gb", "nvidia-rtx-3090-24gb", "nvidia-rtx-4090-24gb",
       "nvidia-rtx-5000-ada-32gb")
BIG = ("nvidia-rtx-a6000-48gb", "nvidia-rtx-6000-ada-48gb", "nvidia-a40-48gb", "nvidia-l40s-48gb",
       "nvidia-a100-pcie-80gb", "nvidia-a100-sxm4-80gb", "nvidia-h100-pcie-80gb")
OOM = (
    *((g, 1, m, f) for g in SMALL for m, f in (("8B", "F16"), ("70B", "Q4_K_M"), ("70B", "F16"))),
    *((g, 1, m, f) for g in MID for m, f in (("70B", "Q4_K_M"), ("70B", "F16"))),
    *((g, 1, "70B", "F16") for g in BIG),
    *((g, n, "70B", "F16") for g, n in (("nvidia-rtx-3090-24gb", 2), ("nvidia-rtx-4090-24gb", 2),
                                        ("nvidia-rtx-3090-24gb", 4), ("nvidia-rtx-4090-24gb", 4),
                                        ("nvidia-rtx-4000-ada-20gb", 4), ("nvidia-rtx-5000-ada-32gb", 4))),
)

GEFORCE = ("nvidia-rtx-30", "nvidia-rtx-40")
WORKSTATION = ("nvidia-rtx-4000-ada", "nvidia-rtx-5000-ada", "nvidia-rtx-6000-ada", "nvidia-rtx-a6000")


def card_class(gpu_id: str) -> str:
    """GeForce, workstation (RTX Ada / RTX A6000) or datacenter (A40, L40S, A100, H100), as NVIDIA sells them."""
    if gpu_id.startswith(WORKSTATION):
        return "workstation"
    return "geforce" if gpu_id.startswith(GEFORCE) else "datacenter"


@dataclass(frozen=True, slots=True)
class Cell:
    """One measured cell: ``kind`` "tg" (decode) or "pp" (prompt), at ``tokens``."""

    gpu: str
    cards: int
    model: str
    fmt: str
    kind: str
    tokens: int
    measured: float | None  # tokens/s; None: "OOM"
    ubatch: int = 512  # llama-bench -ub (n_ubatch): the default but where UBATCH says otherwise

    @property
    def label(self) -> str:
        n = f"{self.cards}x " if self.cards > 1 else ""
        return f"{n}{self.gpu} {self.model} {self.fmt} {self.kind}{self.tokens}"


# Cells the notebooks ran with a smaller micro-batch than the default 512, because the default did not fit:
# "LLaMA 3/Gaming GPUs/3090_6_v3.ipynb" runs 70B F16 with the defaults up to tg4096, then fails to create the n_ctx
# 8192 context ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1275076608", the compute buffer),
# and measures pp4096 with "-b 1536 -ub 256" and pp8192 / tg8192 with "-b 768 -ub 128" (build 4426e298, 2824).
UBATCH = {("nvidia-rtx-3090-24gb", 6, "70B", "F16", "pp", 4096): 256,
          ("nvidia-rtx-3090-24gb", 6, "70B", "F16", "pp", 8192): 128,
          ("nvidia-rtx-3090-24gb", 6, "70B", "F16", "tg", 8192): 128}


def cells() -> list[Cell]:
    out = []
    for gpu, n, model, fmt, tg, pp in ROWS:
        for kind, values in (("tg", tg), ("pp", pp)):
            out += [Cell(gpu, n, model, fmt, kind, t, v, UBATCH.get((gpu, n, model, fmt, kind, t), 512))
                    for t, v in zip(TOKENS, values, strict=True)]
    return out


MODELS = {"8B": "meta-llama/Meta-Llama-3-8B", "70B": "meta-llama/Meta-Llama-3-70B"}


@cache
def _specs():
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.catalog.models import load_model_catalog

    return load_hardware_catalog(), load_model_catalog()


@dataclass(frozen=True, slots=True)
class Ours:
    tokens_per_s: float
    fits: bool
    peak_bound: float  # tokens/s the hardware's roofline allows (bandwidth for tg, dense peak for pp)


@cache
def estimate_cell(cell: Cell, engine: str = "llama-cpp") -> Ours:
    """llmplan's tokens/s and fit verdict for ``cell`` as llama-bench ran it: every layer on the GPUs, an
    fp16 KV cache sized for the test (n_ctx = its tokens), one card alone or a layer split over identical cards."""
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.engine import estimate
    from llmplan.core.hardware import ClusterSpec
    from llmplan.core.inference.multi_gpu import split_layers
    from llmplan.core.workload import InferenceSettings, Scenario

    hw, models = _specs()
    spec, gpu = models.get(MODELS[cell.model]).spec, hw.gpu(cell.gpu).spec
    prompt, out = (cell.tokens, 1) if cell.kind == "pp" else (1, cell.tokens - 1)
    inf = InferenceSettings(engine=engine, weight_format=cell.fmt.lower(), kv_dtype="fp16", prompt_tokens=prompt,
                            output_tokens=out, gpu_layers=spec.num_layers)
    profile = engine_profile(engine)
    if cell.ubatch != profile.prefill_chunk_tokens:
        profile = profile.model_copy(update={"prefill_chunk_tokens": cell.ubatch})
    sc = Scenario(model=spec, cluster=ClusterSpec(gpu=gpu), workload="inference", inference=inf,
                  engine_profile=profile)
    if cell.cards == 1:
        e = estimate(sc)
        tps = e.inference.tokens_per_s_per_user.value if cell.kind == "tg" else \
            e.inference.prefill_tokens_per_s.value
        fits, weights = e.memory.fits, e.memory.weights.value
    else:
        mp = split_layers(sc, [gpu] * cell.cards, gpu_layers=spec.num_layers)
        tps = 1 / mp.tpot_s if cell.kind == "tg" else cell.tokens / mp.ttft_s
        fits, weights = mp.fits, sum(c.weights for c in mp.cards) / cell.cards
    if cell.kind == "tg":  # every token reads each card's weights once, one card after another
        bound = gpu.memory_bandwidth / (weights * cell.cards)
    else:  # 2 FLOP per weight per token at the card's densest rate (int8 for quantised, fp16 otherwise)
        peak = gpu.peak_flops.int8 if cell.fmt != "F16" and gpu.peak_flops.int8 else gpu.peak_flops.fp16
        bound = peak / (2 * spec_params(spec))  # FLOP/s over FLOP per token
    return Ours(tps, fits, bound)


def spec_params(spec) -> float:
    """Parameters a prompt token multiplies (all but the input embedding)."""
    from llmplan.core.params import count_params

    return float(count_params(spec).total - spec.vocab_size * spec.hidden_size)


HBM = ("nvidia-a100", "nvidia-h100")  # the table's HBM cards; every other card here has GDDR6/6X


def anomalous(cell: Cell) -> bool:
    """An F16 prompt run slower than the same card's Q4_K_M run at the same length. In this build a block-quantised
    prompt is dequantised to F16 and then runs the very cuBLAS F16 GEMM that an F16 model runs (ggml-cuda.cu at
    b2843: MMQ only up to 32 tokens when tensor cores are used), so a healthy F16 run is never the slower; these
    cells (L40S, A100 SXM and 4x RTX 5000 Ada, 3-10x below their Q4_K_M rows) measured something else."""
    if cell.kind != "pp" or cell.fmt != "F16" or cell.measured is None:
        return False
    other = _q4_prompts().get((cell.gpu, cell.cards, cell.model, cell.tokens))
    return other is not None and cell.measured < other


@cache
def _q4_prompts() -> dict[tuple[str, int, str, int], float | None]:
    return {(c.gpu, c.cards, c.model, c.tokens): c.measured for c in cells() if c.fmt == "Q4_K_M" and c.kind == "pp"}


def report(engine: str = "llama-cpp") -> str:
    """Every measured cell, ours against the README's, one line each (``python -m`` this module to print it)."""
    lines = [f"{'cell':58s} {'published':>10s} {'llmplan':>10s} {'error':>8s}"]
    for c in cells():
        if c.measured is None:
            continue
        ours = estimate_cell(c, engine).tokens_per_s
        flag = "  (anomalous run)" if anomalous(c) else ""
        lines.append(f"{c.label:58s} {c.measured:10.1f} {ours:10.1f} {ours / c.measured - 1:+8.1%}{flag}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(report(*sys.argv[1:2]))
