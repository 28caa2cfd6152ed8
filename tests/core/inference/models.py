"""config.json excerpts of published checkpoints used by the inference tests (values from each repo's config.json)."""

LLAMA_7B = dict(model_type="llama", vocab_size=32000, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                intermediate_size=11008, max_position_embeddings=4096)  # meta-llama/Llama-2-7b-hf (= LLaMA-1 7B shapes)
LLAMA3_8B = dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                 max_position_embeddings=8192)  # meta-llama/Meta-Llama-3-8B
MISTRAL_7B_V01 = dict(model_type="mistral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336, sliding_window=4096,
                      max_position_embeddings=32768)  # mistralai/Mistral-7B-v0.1
MISTRAL_7B_V02 = {**MISTRAL_7B_V01, "sliding_window": None}  # mistralai/Mistral-7B-Instruct-v0.2: no window
GEMMA2_9B = dict(model_type="gemma2", vocab_size=256000, hidden_size=3584, num_hidden_layers=42,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=256, intermediate_size=14336,
                 sliding_window=4096, max_position_embeddings=8192)  # google/gemma-2-9b
OPT_13B = dict(model_type="opt", vocab_size=50272, hidden_size=5120, num_hidden_layers=40, num_attention_heads=40,
               ffn_dim=20480, max_position_embeddings=2048, word_embed_proj_dim=5120,
               do_layer_norm_before=True)  # facebook/opt-13b
DEEPSEEK_V3 = dict(model_type="deepseek_v3", vocab_size=129280, hidden_size=7168, num_hidden_layers=61,
                   num_attention_heads=128, num_key_value_heads=128, intermediate_size=18432,
                   moe_intermediate_size=2048, n_routed_experts=256, n_shared_experts=1, num_experts_per_tok=8,
                   first_k_dense_replace=3, moe_layer_freq=1, q_lora_rank=1536, kv_lora_rank=512,
                   qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, num_nextn_predict_layers=1,
                   max_position_embeddings=163840, tie_word_embeddings=False)  # deepseek-ai/DeepSeek-V3
MIXTRAL_8X7B = dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                    num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=32768)
LLAMA32_3B = dict(model_type="llama", vocab_size=128256, hidden_size=3072, num_hidden_layers=28,
                  num_attention_heads=24, num_key_value_heads=8, intermediate_size=8192, tie_word_embeddings=True,
                  max_position_embeddings=131072)  # meta-llama/Llama-3.2-3B-Instruct
QWEN25_7B = dict(model_type="qwen2", vocab_size=152064, hidden_size=3584, num_hidden_layers=28, num_attention_heads=28,
                 num_key_value_heads=4, intermediate_size=18944, tie_word_embeddings=False,
                 max_position_embeddings=32768)  # Qwen/Qwen2.5-7B-Instruct
