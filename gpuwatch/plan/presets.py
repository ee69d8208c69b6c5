"""Typical workloads as presets: a catalog model, a default setup in the recommended
regime, its fp32 counterpart, a data set size for epochs, and the levers that matter.

Each default follows the reference recipe its community quotes (named in ``recipe``);
``docs/plan.md`` compares each fp32 figure with commonly quoted memory ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.core.units import shown
from gpuwatch.plan.errors import PlanError


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    model: str  # a budget catalog name
    workload: Workload
    setup: Setup  # the recommended regime
    dataset_samples: int  # one epoch
    dataset: str
    recipe: str
    levers: tuple[str, ...]  # the levers that matter most, in words
    efficiency: float = 0.5  # of the dense peak, measured where a source is named
    efficiency_source: str = "assumed: large matmuls reach 40–60 % of the dense peak"

    def fp32(self) -> Setup:
        """The same setup in plain fp32 (LoRA presets keep their adapters)."""
        return replace(self.setup, precision="fp32", kv_precision=None)


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        "image-classification", "Image classification (ResNet-50, ImageNet)", "resnet-50",
        Workload("train", batch=256, image=(224, 224)),
        Setup(precision="amp-bf16", optimizer="momentum"),
        1_281_167, "ImageNet-1k train split (1,281,167 images)",
        "NVIDIA DeepLearningExamples ResNet-50 v1.5: SGD with momentum, 256 images per "
        "GPU under AMP",
        ("autocast (amp-bf16): half the activation bytes and tensor-core speed",
         "channels-last memory format and a fast data loader: CNNs are rarely compute-bound",
         "a smaller micro-batch with accumulation only if memory runs out (batch norm "
         "statistics change below ~32 images)"),
        0.17, "MLPerf Training v3.0 ResNet-50 on 8× H100 (ID 3.0-2053): ≈ 170 TFLOP/s "
              "per GPU of 989 (docs/plan.md)"),
    Preset(
        "detection", "Object detection (YOLOv5s, COCO)", "yolov5s",
        Workload("train", batch=16, image=(640, 640)),
        Setup(precision="amp-fp16", optimizer="momentum"),
        118_287, "COCO 2017 train (118,287 images)",
        "Ultralytics YOLOv5 train.py defaults: 640×640, batch 16, SGD, AMP",
        ("AMP (amp-fp16), on by default in Ultralytics",
         "image size: memory and time grow with its square",
         "batch: Ultralytics' --batch -1 picks the largest that fits (AutoBatch)"),
        0.17, "taken from ResNet-50's MLPerf figure: a CNN of small convolutions and "
              "batch norm; not measured for YOLOv5"),
    Preset(
        "nlp-pretraining", "NLP pre-training (BERT-large, phase 1)", "bert-large",
        Workload("train", batch=64, seq=128),
        Setup(precision="mixed-fp16", optimizer="adamw"),
        # 2 × the number of 128-token sequences in Wikipedia + BookCorpus (~3.3 B words)
        50_000_000, "Wikipedia + BookCorpus at 128 tokens (about 50 million sequences)",
        "NVIDIA DeepLearningExamples BERT pre-training phase 1: sequence 128, LAMB/AdamW, "
        "mixed precision, gradient accumulation to a global batch of 64 Ki sequences",
        ("mixed precision (fp16 weights and activations, fp32 master)",
         "gradient accumulation for the very large global batch",
         "fused attention; phase 2 (sequence 512) needs a quarter of the batch")),
    Preset(
        "diffusion", "Diffusion fine-tuning (Stable Diffusion 1.5 UNet)", "sd15-unet",
        Workload("train", batch=4, image=(512, 512)),
        Setup(precision="amp-fp16", optimizer="adam8bit", checkpointing="full"),
        100_000, "a 100,000-image fine-tuning set",
        "Hugging Face diffusers train_text_to_image.py: 512×512, fp16 mixed precision, "
        "gradient checkpointing and 8-bit Adam to fit 24 GB cards",
        ("gradient checkpointing: the UNet's activations dominate",
         "8-bit Adam: 860 M parameters of optimizer states",
         "fused (xFormers/SDPA) attention at the 4,096-token first level")),
    Preset(
        "llm-finetuning", "LLM fine-tuning (Llama 3.1 8B, LoRA)", "llama-3.1-8b",
        Workload("train", batch=2, seq=2048, grad_accum=8),
        Setup(precision="bf16", optimizer="adamw", lora_rank=16, checkpointing="full"),
        50_000, "a 50,000-example instruction set at 2,048 tokens",
        "Hugging Face PEFT / torchtune LoRA recipes: bf16 base weights, rank 16 adapters, "
        "activation checkpointing",
        ("LoRA: gradients and optimizer states for the adapters only",
         "4-bit base weights (QLoRA, --precision int4) to fit 24 GB cards",
         "activation checkpointing: activations grow with batch × sequence"),
        0.41, "NeMo AutoModel, Llama 3 8B LoRA on one H100, bf16: 402 model TFLOP/s of "
              "989 (docs/plan.md)"),
)}


def preset_names() -> tuple[str, ...]:
    return tuple(PRESETS)


def lookup_preset(name: str) -> Preset:
    key = name.strip().lower().replace("_", "-")
    if key not in PRESETS:
        raise PlanError("--preset", f"unknown preset {shown(name)}; presets: "
                                    f"{', '.join(PRESETS)}.")
    return PRESETS[key]
