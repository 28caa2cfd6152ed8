"""The system report (``Evaluation.system``) as rows of the results table (Qt-free).

"Beyond the GPU": checkpoints and their write time, failures and goodput, the data the
loader must read, host RAM and offload traffic, power, energy, cost and CO2, and for
inference the cold start. Only the parts that apply are listed: a training plan has no
cold start, an inference server no checkpoint interval, offload rows appear only when
something is offloaded, and a row that does not apply is hidden rather than shown as 0
(unified memory has no PCIe copy; a GPU without a power figure, such as Apple's, no
"Power per GPU"). Every value is a ``Figure`` of ``llmplan.core.system``, so
its tooltip is that figure's formula, inputs and source.
"""

from __future__ import annotations

from llmplan.core.system import Evaluation
from llmplan.gui.report import Row

CHECKPOINTS = "Checkpoints and failures"
DATA_HOST = "Data and host"
POWER = "Power and energy"
SERVING_POWER = "Power and energy (one hour at full load)"
COLD_START = "Serving start-up (cold start)"


def system_rows(est: Evaluation) -> list[Row]:
    s = est.system
    if s is None:
        return []
    out: list[Row] = []
    if s.goodput is not None:  # training
        out += _checkpoints(est)
        out += _data_host(est)
        out += _power(est, POWER, per_hour=False)
    else:  # inference
        out += _cold_start(est)
        out += _power(est, SERVING_POWER, per_hour=True)
    return out


def _checkpoints(est: Evaluation) -> list[Row]:
    s = est.system
    size, io, good = s.checkpoint, s.checkpoint_io, s.goodput
    rows = [Row(CHECKPOINTS, "Checkpoint size", size.total)]
    if size.per_gpu.value < size.total.value:
        rows.append(Row(CHECKPOINTS, "Checkpoint written per GPU", size.per_gpu))
    rows += [
        Row(CHECKPOINTS, "Checkpoint save (training stalls)", io.write_s),
        Row(CHECKPOINTS, "Checkpoint load on restart", io.read_s),
        Row(CHECKPOINTS, "Checkpoint interval", good.interval_s),
        Row(CHECKPOINTS, "Mean time between failures (job)", good.mtbf_s),
        Row(CHECKPOINTS, "Expected interruptions", good.failures, style="count"),
        Row(CHECKPOINTS, "Goodput (useful share of wall time)", good.goodput),
        Row(CHECKPOINTS, "Effective training time (with failures)", good.wall_time_s),
    ]
    return rows


def _data_host(est: Evaluation) -> list[Row]:
    s = est.system
    data, host = s.data, s.host
    rows: list[Row] = []
    if data is not None:
        rows += [Row(DATA_HOST, "Data read bandwidth needed", data.read_bandwidth_needed),
                 Row(DATA_HOST, "Data read bandwidth available", data.read_bandwidth_available)]
        if data.tokenizer_cores_per_node.value > 0:
            rows.append(Row(DATA_HOST, "Tokeniser CPU cores per node", data.tokenizer_cores_per_node, style="count"))
            rows.append(Row(DATA_HOST, "CPU load (tokenising)", data.cpu_load, style="load"))
    if host is not None:
        rows.append(Row(DATA_HOST, "Host RAM per node", host.ram_per_node))
        if host.pcie_bytes_per_step.value > 0:
            rows += [Row(DATA_HOST, "Offload PCIe traffic per GPU per step", host.pcie_bytes_per_step),
                     Row(DATA_HOST, "Offload PCIe time per step", host.pcie_time_per_step),
                     Row(DATA_HOST, "PCIe load (share of the step)", host.pcie_load, style="load")]
        if host.nvme_bytes_per_step.value > 0:
            rows += [Row(DATA_HOST, "NVMe offload traffic per node per step", host.nvme_bytes_per_step),
                     Row(DATA_HOST, "NVMe offload time per step", host.nvme_time_per_step),
                     Row(DATA_HOST, "NVMe load (share of the step)", host.nvme_load, style="load")]
    return rows


def _power(est: Evaluation, section: str, per_hour: bool) -> list[Row]:
    p = est.system.power
    suffix = " per hour" if per_hour else ""
    per_gpu = [Row(section, "Power per GPU", p.gpu_watts)] if p.gpu_watts.value > 0 else []  # 0: no figure (Apple)
    return [
        *per_gpu,
        Row(section, "IT power (GPUs and their nodes)", p.it_watts),
        Row(section, "Power at the wall (× PUE)", p.facility_watts),
        Row(section, f"Energy{suffix}", p.energy_kwh),
        Row(section, f"Electricity cost{suffix}", p.cost_usd),
        Row(section, f"CO₂ emitted{suffix}", p.co2_kg),
    ]


def _cold_start(est: Evaluation) -> list[Row]:
    c = est.system.cold_start
    if c is None:
        return []
    return [
        Row(COLD_START, "Weights to load", c.weight_bytes),
        Row(COLD_START, "Read from storage", c.storage_read_s),
        *([Row(COLD_START, "Copy to the GPUs over PCIe", c.pcie_copy_s)] if c.pcie_copy_s.value > 0 else []),
        Row(COLD_START, "Cold start in all", c.total_s),
    ]
