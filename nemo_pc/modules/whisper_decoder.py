"""Whisper's text decoder as NeMo's ``TransformerDecoderNM``, so that Whisper's pretrained decoder weights
(:func:`nemo_pc.parts.whisper_weights.load_decoder_state`) load into NeMo's own decoder blocks and decoding.

NeMo's pre-norm blocks are Whisper's: the same layer order, GELU (erf) feed-forward, a final layer norm, and queries
and keys each scaled by ``d_head ** -0.25``. Two parts of NeMo's embedding differ and are switched off here.
"""

from __future__ import annotations

from nemo.collections.asr.modules.transformer.transformer import TransformerDecoderNM
from torch import nn


class WhisperTransformerDecoderNM(TransformerDecoderNM):
    """NeMo's Transformer decoder shaped and wired as Whisper's; the defaults are Whisper tiny.en's decoder.

    Whisper's decoder input is the token embedding plus a learned position embedding, with no layer norm and no
    padding row; NeMo's ``TransformerEmbedding`` layer-normalizes that sum, which garbles a pretrained Whisper
    decoder's output, and keeps row 0 of the token embedding (Whisper's ``!``) from training as a padding row.
    Here the norm is an identity unless ``embedding_layer_norm`` is set, and no row is a padding row. The state dict
    then has no ``_embedding.layer_norm.*`` keys.

    Config keys:
        vocab_size, hidden_size, num_layers, inner_size, num_attention_heads, max_sequence_length: the architecture
            (tiny.en: 51864, 384, 4, 1536, 6, 448).
        num_token_types, embedding_dropout, learn_positional_encodings, ffn_dropout, attn_score_dropout,
            attn_layer_dropout, hidden_act, pre_ln, pre_ln_final_layer_norm: as in ``TransformerDecoderNM``
            (Whisper: 0, learned positions, ``gelu``, pre-norm with a final layer norm, no dropout).
        embedding_layer_norm: keep NeMo's layer norm after the embeddings (False for Whisper's weights).
    """

    def __init__(
        self,
        vocab_size: int = 51864,
        hidden_size: int = 384,
        num_layers: int = 4,
        inner_size: int = 1536,
        num_attention_heads: int = 6,
        max_sequence_length: int = 448,
        num_token_types: int = 0,
        embedding_dropout: float = 0.0,
        learn_positional_encodings: bool = True,
        ffn_dropout: float = 0.0,
        attn_score_dropout: float = 0.0,
        attn_layer_dropout: float = 0.0,
        hidden_act: str = "gelu",
        pre_ln: bool = True,
        pre_ln_final_layer_norm: bool = True,
        embedding_layer_norm: bool = False,
    ) -> None:
        super().__init__(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            inner_size=inner_size,
            num_attention_heads=num_attention_heads,
            max_sequence_length=max_sequence_length,
            num_token_types=num_token_types,
            embedding_dropout=embedding_dropout,
            learn_positional_encodings=learn_positional_encodings,
            ffn_dropout=ffn_dropout,
            attn_score_dropout=attn_score_dropout,
            attn_layer_dropout=attn_layer_dropout,
            hidden_act=hidden_act,
            pre_ln=pre_ln,
            pre_ln_final_layer_norm=pre_ln_final_layer_norm,
        )
        if not embedding_layer_norm:
            self._embedding.layer_norm = nn.Identity()
        self._embedding.token_embedding.padding_idx = None
