"""Catalogued mistakes that no public check can reveal, each with the reason.

A public check fails on every catalogued mistake its own inputs can reveal (DESIGN.md: it never
passes an answer that the hidden tests fail on those inputs; grader.judge.proxy.IN_PUBLIC_CHECK).
The entries below pass every public check of their exercise, and ``tests/test_catalogue.py``
holds them to it: their mistake shows only on inputs that the public checks do not use (a half
dtype, a strided view, an input to reject, a fully masked row, scores large enough to overflow),
or they hard-code the public case. Keyed by notebook, then ``(exercise, mistake)`` as the entry
names them; ``python scripts/catalogue_costs.py NN --blind-table`` prints the lines of the entries
not yet here.
"""
from __future__ import annotations

PUBLIC_BLIND: dict[str, dict[tuple[str, str], str]] = {
    '01_permutation_invariance': {
        ('symmetry_of', 'shallow: one random permutation, as the released cells try'):
            'only inputs the public checks do not use show it; the hidden tests that do: Attention '
            "scaled by the parity of the tokens' order (9 tokens) is neither, though no even "
            'permutation shows it; a token-wise MLP is equivariant; Pooled attention scaled by the '
            "parity of the tokens' order (9 tokens) is neither, though every even permutation "
            'leaves it unchanged; plain pooling is invariant; Hidden attention variants (pooling, '
            'masks, position vectors and biases, position-dependent scales), any T >= 2 and width',
        ('symmetry_of', 'shallow: one cyclic shift of the tokens'):
            'only inputs the public checks do not use show it; the hidden tests that do: Attention '
            "scaled by the parity of the tokens' order (9 tokens) is neither, though no even "
            'permutation shows it; a token-wise MLP is equivariant; Pooled attention scaled by the '
            "parity of the tokens' order (9 tokens) is neither, though every even permutation "
            'leaves it unchanged; plain pooling is invariant',
        ('position_probe_r2', 'shallow: fit and score on every row (an in-sample R^2)'):
            'only inputs the public checks do not use show it; the hidden tests that do: A planted '
            'layer that ignores the position, 80 sequences of 16 tokens, d = 48: the fitted read-'
            'out explains nothing new; A planted layer whose mean moves with the position, 40 '
            'sequences of 12 tokens, d = 24',
        ('scaled_dot_product_attention', 'naive softmax that overflows'):
            'only inputs the public checks do not use show it; the hidden tests that do: Scores '
            'around 1e3 give finite outputs (the softmax must not overflow)',
        ('scaled_dot_product_attention', 'always returns float32'):
            'only inputs the public checks do not use show it; the hidden tests that do: float64, '
            'float16 and bfloat16 inputs give an output of their dtype, of shape (..., T_q, d_v)',
        ('scaled_dot_product_attention', 'fully masked row left as NaN'):
            'only inputs the public checks do not use show it; the hidden tests that do: A query '
            "row whose keys are all masked gets zeros (as torch's SDPA), with a full-shape or a "
            'broadcast mask',
        ('scaled_dot_product_attention', "masked fill with the dtype's minimum"):
            'only inputs the public checks do not use show it; the hidden tests that do: A query '
            "row whose keys are all masked gets zeros (as torch's SDPA), with a full-shape or a "
            'broadcast mask',
        ('self_attention', "no check of the weights' shapes"):
            'only inputs the public checks do not use show it; the hidden tests that do: A w_q, '
            'w_k or w_v whose first dimension is not d_model is rejected with a ValueError',
        ('max_equivariance_error', 'signed difference'):
            'only inputs the public checks do not use show it; the hidden tests that do: The error'
            ' is the largest absolute difference, also when the largest is negative (-3, the '
            'others +1)',
        ('max_equivariance_error', 'permutes the first axis'):
            'only inputs the public checks do not use show it; the hidden tests that do: Batched x'
            ' (3, T, d): the permutation acts on the token axis (-2), not the batch axis',
        ('scaled_dot_product_attention', 'half inputs upcast to float32 and returned as float32'):
            'only inputs the public checks do not use show it; the hidden tests that do: float64, '
            'float16 and bfloat16 inputs give an output of their dtype, of shape (..., T_q, d_v)',
        ('scaled_dot_product_attention',
         'batch dims flattened with .view (fails on non-contiguous q, k, v)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any batch'
            ' shape, sizes (d_k = 1 included), boolean mask shape, dtype and layout; q, k, v and '
            'the mask are left unchanged',
        ('scaled_dot_product_attention', 'validates only the mask, not the shapes of q, k, v'):
            'only inputs the public checks do not use show it; the hidden tests that do: A float '
            'or uint8 mask, q and k of different widths d_k, and k and v with different key '
            'counts: ValueError',
        ('scaled_dot_product_attention',
         'rejects only float masks (a uint8 mask is used as an index)'):
            'only inputs the public checks do not use show it; the hidden tests that do: A float '
            'or uint8 mask, q and k of different widths d_k, and k and v with different key '
            'counts: ValueError',
        ('scaled_dot_product_attention', 'fully masked rows detected only for a full-shape mask'):
            'only inputs the public checks do not use show it; the hidden tests that do: A query '
            "row whose keys are all masked gets zeros (as torch's SDPA), with a full-shape or a "
            'broadcast mask',
        ('self_attention', 'x flattened with .view (fails on a non-contiguous x)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any T, '
            'widths (1 included), causal flag, dtype and memory layout of x and the weights, with '
            'or without a batch axis',
        ('self_attention', 'validates only w_q'):
            'only inputs the public checks do not use show it; the hidden tests that do: A w_q, '
            'w_k or w_v whose first dimension is not d_model is rejected with a ValueError',
        ('self_attention', 'half inputs projected in float32 and returned as float32'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any T, '
            'widths (1 included), causal flag, dtype and memory layout of x and the weights, with '
            'or without a batch axis',
        ('self_attention', 'causal mask sized from x.shape[1] (right only for 3-D x)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Batched '
            'input (2, 3, T, d_model) with d_k != d_v, causal, matches the reference',
        ('max_equivariance_error', 'length checked against the first axis of x'):
            'only inputs the public checks do not use show it; the hidden tests that do: A '
            'permutation whose length differs from the token axis (-2) is rejected with a '
            'ValueError, batched or not',
        ('max_equivariance_error', 'batch dims flattened with .view'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'function (equivariant or not, wider output), batch axes, T (1 included), dtype and '
            'layout of x; x is left unchanged',
        ('max_equivariance_error', 'permutes x in place to reuse its memory'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'function (equivariant or not, wider output), batch axes, T (1 included), dtype and '
            'layout of x; x is left unchanged',
        ('symmetry_of', 'a detector that accepts everything'):
            'only inputs the public checks do not use show it; the hidden tests that do: A score '
            'bias -|i - j| commutes with reversing the sequence, yet depends on position: neither;'
            " Only the last position's scores are scaled (10 tokens): neither, though swapping "
            'tokens 0 and 1 cannot show it; The mean token repeated at every position: a (T, d) '
            'output that no shuffle changes is invariant; Learned position vectors of size 1e-4 '
            'added before attention: a small effect, still neither; Hidden attention variants '
            '(pooling, masks, position vectors, position-dependent scales), any T >= 2 and width',
        ('symmetry_of', 'only the reversal of the sequence tried'):
            'only inputs the public checks do not use show it; the hidden tests that do: A score '
            'bias -|i - j| commutes with reversing the sequence, yet depends on position: neither',
        ('symmetry_of', 'only a swap of the first two tokens tried'):
            'only inputs the public checks do not use show it; the hidden tests that do: Only the '
            "last position's scores are scaled (10 tokens): neither, though swapping tokens 0 and "
            '1 cannot show it',
        ('symmetry_of', 'a tolerance so loose (1e-3) that small position effects pass'):
            'only inputs the public checks do not use show it; the hidden tests that do: Learned '
            'position vectors of size 1e-4 added before attention: a small effect, still neither',
        ('symmetry_of', "invariance decided by the output's shape (one vector means invariant)"):
            'only inputs the public checks do not use show it; the hidden tests that do: The mean '
            'token repeated at every position: a (T, d) output that no shuffle changes is '
            'invariant',
        ('permutation_matrix', 'integer dtype'):
            'only inputs the public checks do not use show it; the hidden tests that do: For a '
            'list input too, P is a float32 matrix with one 1 per row and column (the orientation '
            'belongs to the public test)',
        ('permutation_matrix', 'repeated indices accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: Repeated,'
            ' out-of-range or negative indices, and a 2-D perm (even of 0..3 once each), are '
            'rejected with a ValueError',
        ('permutation_matrix', 'out-of-range index raises IndexError'):
            'only inputs the public checks do not use show it; the hidden tests that do: Repeated,'
            ' out-of-range or negative indices, and a 2-D perm (even of 0..3 once each), are '
            'rejected with a ValueError',
        ('permutation_matrix', 'checks only the upper bound (negative indices wrap around)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Repeated,'
            ' out-of-range or negative indices, and a 2-D perm (even of 0..3 once each), are '
            'rejected with a ValueError',
        ('permutation_matrix', 'a 2-D perm flattened instead of rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: Repeated,'
            ' out-of-range or negative indices, and a 2-D perm (even of 0..3 once each), are '
            'rejected with a ValueError',
        ('unchanged_outputs', 'shallow: the public case hard-coded'):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('unchanged_outputs', 'every token that stays in place (a moved key is ignored)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Tokens 1 '
            'and 3 of 6 swapped: token 2 stays in place, but one of its keys changed; Permutations'
            ' of 1 to 12 tokens that shuffle a few random blocks (given as a tensor)',
        ('unchanged_outputs', 'a repeated index accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: A '
            'repeated index ([0, 0, 2]) is not a permutation: ValueError',
        ('position_probe_r2', 'shallow: the public case hard-coded'):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('position_probe_r2', 'shallow: a read-out of y_t alone (the spread is invisible to it)'):
            'only inputs the public checks do not use show it; the hidden tests that do: A planted'
            ' layer whose outputs only shrink with the position, as causal averaging makes them; A'
            ' planted layer whose mean and spread both depend on the position; Other planted '
            'layers, sizes, dtypes and memory layouts; the outputs are left unchanged',
        ('position_probe_r2', 'no ValueError for a (n, d) table'):
            'only inputs the public checks do not use show it; the hidden tests that do: Outputs '
            'that are not (n, T, d), or hold one position only: ValueError',
        ('symmetry_of', "the label read from the function's docstring"):
            'only inputs the public checks do not use show it; the hidden tests that do: A score '
            'bias -|i - j| commutes with reversing the sequence, yet depends on position: neither;'
            " Only the last position's scores are scaled (10 tokens): neither, though swapping "
            'tokens 0 and 1 cannot show it; The mean token repeated at every position: a (T, d) '
            'output that no shuffle changes is invariant; Learned position vectors of size 1e-4 '
            'added before attention: a small effect, still neither; Hidden attention variants '
            '(pooling, masks, position vectors, position-dependent scales), any T >= 2 and width',
        ('symmetry_of', 'the label guessed from repr, dir, __dict__ and type'):
            'only inputs the public checks do not use show it; the hidden tests that do: A score '
            'bias -|i - j| commutes with reversing the sequence, yet depends on position: neither;'
            " Only the last position's scores are scaled (10 tokens): neither, though swapping "
            'tokens 0 and 1 cannot show it; The mean token repeated at every position: a (T, d) '
            'output that no shuffle changes is invariant; Learned position vectors of size 1e-4 '
            'added before attention: a small effect, still neither; Hidden attention variants '
            '(pooling, masks, position vectors, position-dependent scales), any T >= 2 and width',
    },
    '02_sinusoidal_encoding': {
        ('sinusoidal_encoding', 'angles computed in float32'):
            'only inputs the public checks do not use show it; the hidden tests that do: Positions'
            ' up to 30000 are accurate to 1e-5: the angles are computed in float64',
        ('sinusoidal_encoding', 'odd d_model silently truncated'):
            'only inputs the public checks do not use show it; the hidden tests that do: An odd '
            'd_model, and a num_positions or d_model that is zero or negative, are rejected with '
            'ValueError',
        ('offset_matrix', 'the offset taken as |k| (negative offsets move forwards)'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'offset_matrix(-7, 12) undoes offset_matrix(7, 12): a negative offset moves backwards',
        ('offset_matrix', 'float64 returned'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'offset_matrix(0, 6) is the identity, as a float32 tensor',
        ('linear_shift_residual', 'negative offsets sliced as positive'):
            'only inputs the public checks do not use show it; the hidden tests that do: A random '
            '(25, 3) table, k = -4: rows p - 4 are predicted from rows p (the direction of the '
            'map)',
        ('sinusoidal_encoding', "frequencies computed in float32 (torch's default dtype)"):
            'only inputs the public checks do not use show it; the hidden tests that do: Positions'
            ' up to 30000 are accurate to 1e-5: the angles are computed in float64',
        ('sinusoidal_encoding', 'checks only the parity of d_model and the sign of num_positions'):
            'only inputs the public checks do not use show it; the hidden tests that do: An odd '
            'd_model, and a num_positions or d_model that is zero or negative, are rejected with '
            'ValueError',
        ('sinusoidal_encoding', 'base rounded to a whole number'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any size '
            '(d_model = 2 and one position included) and base (not only whole numbers), to 5e-5',
        ('offset_matrix', 'angles computed in float32'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'offset_matrix(250, 10, base=50) matches the formula with omega_i = 50^(-2i/10), '
            'angles in float64',
        ('offset_matrix', 'checks only the parity of d_model'):
            'only inputs the public checks do not use show it; the hidden tests that do: An odd, '
            'zero or negative d_model is rejected with a ValueError',
        ('linear_shift_residual', "computed in the table's dtype (float32 for a float32 table)"):
            'only inputs the public checks do not use show it; the hidden tests that do: Any table'
            ' size (one pair of rows, fewer pairs than columns), offset sign, float32 or float64, '
            'layout; the table is left unchanged',
        ('linear_shift_residual',
         'table normalised in place (the ratio is unchanged, the input is not)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any table'
            ' size (one pair of rows, fewer pairs than columns), offset sign, float32 or float64, '
            'layout; the table is left unchanged',
        ('linear_shift_residual', 'only checks the offset (a 1-D or 3-D table is not rejected)'):
            'only inputs the public checks do not use show it; the hidden tests that do: |k| >= '
            'the number of rows (either sign), a 1-D table and a 3-D table are rejected with '
            'ValueError',
        ('relative_attention_projections', 'only a zero temperature rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: A zero or'
            ' negative temperature, and an odd, zero or negative d_model, are rejected with a '
            'ValueError',
        ('relative_attention_projections',
         'offset map built inline, d_model checked only for parity'):
            'only inputs the public checks do not use show it; the hidden tests that do: A zero or'
            ' negative temperature, and an odd, zero or negative d_model, are rejected with a '
            'ValueError',
        ('relative_attention_projections', 'base rounded to a whole number'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'offset sign, d_model (2 included), temperature and base (not only whole numbers): w_q'
            ' @ w_k.T = M_{-k} / tau',
        ('offset_head_share', 'negative offsets read as the queries from k on'):
            'only inputs the public checks do not use show it; the hidden tests that do: k = -3 '
            '(the head looks ahead): queries m = 0..T-4, weight on key m + 3; 30 positions, '
            'd_model = 8, base 100',
        ('best_band', 'always the fast band (the exact-decoding table read as the answer)'):
            'only inputs the public checks do not use show it; the hidden tests that do: 256 '
            'positions, sigma = 1.1: the band with the smallest mean error (measured by the '
            'grader); 512 positions, sigma = 0.75: the band with the smallest mean error (measured'
            ' by the grader); 2048 positions, sigma = 0.55: the band with the smallest mean error '
            '(measured by the grader); Any noise level from 0.05 to 1.5 and length from 64 to '
            "1024: within 25% of the best band's mean error",
        ('best_band', 'always the middle band'):
            'only inputs the public checks do not use show it; the hidden tests that do: 256 '
            'positions, sigma = 0.5: the band with the smallest mean error (measured by the '
            'grader); 512 positions, sigma = 0.4: the band with the smallest mean error (measured '
            'by the grader); 2048 positions, sigma = 0.25: the band with the smallest mean error '
            '(measured by the grader); Any noise level from 0.05 to 1.5 and length from 64 to '
            "1024: within 25% of the best band's mean error",
        ('best_band', "always fast and slow together (each scale covering the other's weakness)"):
            'only inputs the public checks do not use show it; the hidden tests that do: 256 '
            'positions, sigma = 0.5: the band with the smallest mean error (measured by the '
            'grader); 256 positions, sigma = 1.1: the band with the smallest mean error (measured '
            'by the grader); 512 positions, sigma = 0.4: the band with the smallest mean error '
            '(measured by the grader); 512 positions, sigma = 0.75: the band with the smallest '
            'mean error (measured by the grader); 2048 positions, sigma = 0.25: the band with the '
            'smallest mean error (measured by the grader); 2048 positions, sigma = 0.55: the band '
            'with the smallest mean error (measured by the grader); Any noise level from 0.05 to '
            "1.5 and length from 64 to 1024: within 25% of the best band's mean error",
        ('best_band', 'the slow band'):
            'only inputs the public checks do not use show it; the hidden tests that do: 256 '
            'positions, sigma = 0.5: the band with the smallest mean error (measured by the '
            'grader); 256 positions, sigma = 1.1: the band with the smallest mean error (measured '
            'by the grader); 512 positions, sigma = 0.4: the band with the smallest mean error '
            '(measured by the grader); 512 positions, sigma = 0.75: the band with the smallest '
            'mean error (measured by the grader); 2048 positions, sigma = 0.25: the band with the '
            'smallest mean error (measured by the grader); 2048 positions, sigma = 0.55: the band '
            'with the smallest mean error (measured by the grader); Any noise level from 0.05 to '
            "1.5 and length from 64 to 1024: within 25% of the best band's mean error",
        ('best_band', 'measured by the fraction decoded exactly instead of the mean error'):
            'only inputs the public checks do not use show it; the hidden tests that do: 256 '
            'positions, sigma = 1.1: the band with the smallest mean error (measured by the '
            'grader); 512 positions, sigma = 0.75: the band with the smallest mean error (measured'
            ' by the grader); 2048 positions, sigma = 0.55: the band with the smallest mean error '
            '(measured by the grader); Any noise level from 0.05 to 1.5 and length from 64 to '
            "1024: within 25% of the best band's mean error",
        ('best_band', 'a noise threshold that ignores the length (fast below sigma 0.45)'):
            'only inputs the public checks do not use show it; the hidden tests that do: 256 '
            'positions, sigma = 0.5: the band with the smallest mean error (measured by the '
            'grader); Any noise level from 0.05 to 1.5 and length from 64 to 1024: within 25% of '
            "the best band's mean error",
        ('decoding_inv_freq', "the paper's ladder (clears the lowest noise level only)"):
            'only inputs the public checks do not use show it; the hidden tests that do: L = 1024,'
            ' sigma = 0.2: at least 0.995 of the positions decoded exactly; L = 1024, sigma = 0.3:'
            ' at least 0.98 of the positions decoded exactly; L = 1024, sigma = 0.4: at least 0.96'
            ' of the positions decoded exactly; L = 1024, sigma = 0.5: at least 0.85 of the '
            'positions decoded exactly; Any length from 64 to 2048 positions, sigma = 0.3: at '
            'least 0.99 decoded exactly',
        ('decoding_inv_freq',
         'the fast band of the band experiment (the 8 fastest pairs of d_model = 64)'):
            'only inputs the public checks do not use show it; the hidden tests that do: L = 1024,'
            ' sigma = 0.4: at least 0.96 of the positions decoded exactly; L = 1024, sigma = 0.5: '
            'at least 0.85 of the positions decoded exactly; Any length from 64 to 2048 positions,'
            ' sigma = 0.3: at least 0.99 decoded exactly',
        ('decoding_inv_freq', 'only fast frequencies, close together'):
            'only inputs the public checks do not use show it; the hidden tests that do: L = 1024,'
            ' sigma = 0.1: at least 0.99 of the positions decoded exactly; L = 1024, sigma = 0.2: '
            'at least 0.995 of the positions decoded exactly; L = 1024, sigma = 0.3: at least 0.98'
            ' of the positions decoded exactly; L = 1024, sigma = 0.4: at least 0.96 of the '
            'positions decoded exactly; L = 1024, sigma = 0.5: at least 0.85 of the positions '
            'decoded exactly; Any length from 64 to 2048 positions, sigma = 0.3: at least 0.99 '
            'decoded exactly',
        ('decoding_inv_freq', "evenly spaced frequencies (the notebook's control)"):
            'only inputs the public checks do not use show it; the hidden tests that do: L = 1024,'
            ' sigma = 0.2: at least 0.995 of the positions decoded exactly; L = 1024, sigma = 0.3:'
            ' at least 0.98 of the positions decoded exactly; L = 1024, sigma = 0.4: at least 0.96'
            ' of the positions decoded exactly; L = 1024, sigma = 0.5: at least 0.85 of the '
            'positions decoded exactly; Any length from 64 to 2048 positions, sigma = 0.3: at '
            'least 0.99 decoded exactly',
        ('decoding_inv_freq', 'a ladder from 2 rad down to 2/L (its slow pairs waste dimensions)'):
            'only inputs the public checks do not use show it; the hidden tests that do: L = 1024,'
            ' sigma = 0.4: at least 0.96 of the positions decoded exactly; L = 1024, sigma = 0.5: '
            'at least 0.85 of the positions decoded exactly',
        ('breakdown_noise', "the public case's value hard-coded"):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('breakdown_noise', 'the closed form of a +-1 bit code, one bit per column, for any table'):
            'only inputs the public checks do not use show it; the hidden tests that do: A +-0.7 '
            'code of 5 bits, rows shuffled, padded to width 7, rotated and moved: accuracy 0.5; 16'
            ' positions spaced 0.8 apart on a line in 6 dimensions (rows of different norms): '
            'accuracy 0.5; A 5 x 4 grid (spacings 1.0 and 0.6), turned in 4 dimensions: accuracy '
            '0.7; Points on a line: any number, spacing, width, accuracy, float32 or float64 and '
            'layout; the table is left unchanged',
        ('breakdown_noise', 'nearest row by the largest dot product, not the smallest distance'):
            'only inputs the public checks do not use show it; the hidden tests that do: A +-0.7 '
            'code of 5 bits, rows shuffled, padded to width 7, rotated and moved: accuracy 0.5; 16'
            ' positions spaced 0.8 apart on a line in 6 dimensions (rows of different norms): '
            'accuracy 0.5; A 5 x 4 grid (spacings 1.0 and 0.6), turned in 4 dimensions: accuracy '
            '0.7; Points on a line: any number, spacing, width, accuracy, float32 or float64 and '
            'layout; the table is left unchanged',
        ('breakdown_noise', 'no check of the accuracy (1 and 0 accepted)'):
            'only inputs the public checks do not use show it; the hidden tests that do: A table '
            'that is not 2-D or has one row, and an accuracy outside (1/P, 1), are rejected with '
            'ValueError',
        ('shiftable_encoding',
         "the sinusoidal encoding of section 1 at d_model = 8 (the notebook's recipe)"):
            'only inputs the public checks do not use show it; the hidden tests that do: One map '
            'per offset, bounded, and positions 0..1023 at least 1.0 apart: the middle threshold; '
            'One map per offset, bounded, and positions 0..1023 at least 1.2 apart: the top '
            'threshold',
        ('shiftable_encoding', 'sines alone (no fixed linear map)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Bounded, '
            'and the map fitted on positions 0..255 moves positions it never saw by the offset '
            '(residual <= 1e-4); One map per offset, bounded, and positions 0..1023 at least 1.0 '
            'apart: the middle threshold; One map per offset, bounded, and positions 0..1023 at '
            'least 1.2 apart: the top threshold',
        ('shiftable_encoding', 'the +-1 bits of the position (8 bits wrap after 256)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Bounded: '
            'no position up to |pos| = 10^6 gets a vector longer than twice those of positions '
            '0..1023 (which stay apart); Bounded, and the map fitted on positions 0..255 moves '
            'positions it never saw by the offset (residual <= 1e-4); One map per offset, bounded,'
            ' and positions 0..1023 at least 1.0 apart: the middle threshold; One map per offset, '
            'bounded, and positions 0..1023 at least 1.2 apart: the top threshold',
        ('shiftable_encoding', 'one frequency for every pair'):
            'only inputs the public checks do not use show it; the hidden tests that do: Bounded: '
            'no position up to |pos| = 10^6 gets a vector longer than twice those of positions '
            '0..1023 (which stay apart); Bounded, and the map fitted on positions 0..255 moves '
            'positions it never saw by the offset (residual <= 1e-4); One map per offset, bounded,'
            ' and positions 0..1023 at least 1.0 apart: the middle threshold; One map per offset, '
            'bounded, and positions 0..1023 at least 1.2 apart: the top threshold',
        ('shiftable_encoding', 'angles computed in float32 (wrong far from the window)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Bounded, '
            'and the map fitted on positions 0..255 moves positions it never saw by the offset '
            '(residual <= 1e-4); One map per offset, bounded, and positions 0..1023 at least 1.0 '
            'apart: the middle threshold; One map per offset, bounded, and positions 0..1023 at '
            'least 1.2 apart: the top threshold',
    },
    '03_addition_vs_concatenation': {
        ('is_fair_protocol',
         "shallow: the docstring's example shape only (N = 200, d = 20, C = 4)"):
            'only inputs the public checks do not use show it; the hidden tests that do: Features '
            "chosen with every row's labels, then a fair split, leak (more with few rows and many "
            'features); chosen on the training half, they do not',
        ('pattern_term', "shallow: how often a term's largest key is the sum's (argmax agreement)"):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'pattern a window of keys per query, a small term deciding only which key of it is '
            'largest',
        ('embed', 'negative ids wrap around'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok '
            '!= d_pos, T > T_max,',
        ('embed', 'no width check for add'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok '
            '!= d_pos, T > T_max,',
        ('embed', 'only works for (B, T) ids'):
            'only inputs the public checks do not use show it; the hidden tests that do: Ids of '
            'shape (T,) and (2, 3, T) work in both modes (the position axis is the last one)',
        ('embed', 'unknown mode falls back to concat'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok '
            '!= d_pos, T > T_max,',
        ('attention_logit_terms', 'no scaling'):
            'only inputs the public checks do not use show it; the hidden tests that do: e (3, 6, '
            '8) with one position table (6, 8), and a head of width 2 (W of shape (8, 2)): the '
            'projections',
        ('attention_logit_terms', 'scaled by sqrt(d) of the input'):
            'only inputs the public checks do not use show it; the hidden tests that do: e (3, 6, '
            '8) with one position table (6, 8), and a head of width 2 (W of shape (8, 2)): the '
            'projections',
        ('attention_logit_terms', 'weights transposed (x @ W^T, square only)'):
            'only inputs the public checks do not use show it; the hidden tests that do: e (3, 6, '
            '8) with one position table (6, 8), and a head of width 2 (W of shape (8, 2)): the '
            'projections',
        ('attention_logit_terms', 'only works for 2-D vectors'):
            'only inputs the public checks do not use show it; the hidden tests that do: e (3, 6, '
            '8) with one position table (6, 8), and a head of width 2 (W of shape (8, 2)): the '
            'projections',
        ('embed', 'ids flattened with .view (non-contiguous ids fail)'):
            'only inputs the public checks do not use show it; the hidden tests that do: embed '
            'matches the float64 reference for (B, T) ids, T < T_max, any widths, dtypes, id '
            'dtypes and layouts',
        ('embed', 'int32 ids rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: embed '
            'matches the float64 reference for (B, T) ids, T < T_max, any widths, dtypes, id '
            'dtypes and layouts',
        ('embed', 'bool ids accepted (only floating ids rejected)'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok '
            '!= d_pos, T > T_max,',
        ('embed', '0-d ids not rejected (IndexError)'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok '
            '!= d_pos, T > T_max,',
        ('embed', 'half-precision tables upcast to float32 (float32 returned)'):
            'only inputs the public checks do not use show it; the hidden tests that do: embed '
            'matches the float64 reference for (B, T) ids, T < T_max, any widths, dtypes, id '
            'dtypes and layouts',
        ('embed', 'mode compared case-insensitively'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: an unknown mode ("sum", "Add", "concatenate", ""), "add" with d_tok '
            '!= d_pos, T > T_max,',
        ('attention_logit_terms',
         'rows flattened with .view for torch.mm (non-contiguous inputs fail)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The four '
            'terms match float64 for any batch shape, T, d, d_head, float dtype and layout of all '
            'four inputs',
        ('attention_logit_terms', 'half inputs upcast to float32 (float32 returned)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The four '
            'terms match float64 for any batch shape, T, d, d_head, float dtype and layout of all '
            'four inputs',
        ('attention_logit_terms', 'position width not checked (matmul error)'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: W_q and W_k of different shapes, W that is not a matrix, token or '
            'position vectors whose',
        ('attention_logit_terms', '1-D weights not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'ValueError for: W_q and W_k of different shapes, W that is not a matrix, token or '
            'position vectors whose',
        ('is_fair_protocol', 'accepts every protocol'):
            'only inputs the public checks do not use show it; the hidden tests that do: Protocols'
            ' whose fit sees the rows they score (fitted on all rows; scored on the training half)'
            ' leak; A protocol that reports the best of 10 random splits leaks (each split alone '
            'is fair: only the mean of many; A protocol that trains on the first half of the rows '
            'as given and tests on the second leaks when the rows; The verdict depends on the '
            'protocol: a fair split and a protocol that scores rows it was fitted on do not',
        ('is_fair_protocol',
         "one call per protocol (a leak smaller than one call's scatter is missed)"):
            'only inputs the public checks do not use show it; the hidden tests that do: A '
            'protocol that reports the best of 10 random splits leaks (each split alone is fair: '
            'only the mean of many',
        ('is_fair_protocol', 'rows only in random order (a split without a shuffle passes)'):
            'only inputs the public checks do not use show it; the hidden tests that do: A '
            'protocol that trains on the first half of the rows as given and tests on the second '
            'leaks when the rows',
        ('is_fair_protocol', 'only a score above chance counts as a leak'):
            'only inputs the public checks do not use show it; the hidden tests that do: A '
            'protocol that trains on the first half of the rows as given and tests on the second '
            'leaks when the rows',
        ('held_out_accuracy',
         'shallow: the earlier recipe, train on the even values of the other factor and test on the odd ones'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'position code is on the odd tokens only (40 tokens x 10 positions); each even token '
            'comes at 2; The token code is at the odd positions only (12 tokens x 40 positions, '
            'float32, LDA); each even position',
        ('held_out_accuracy',
         'shallow: the pairs split at random (the probe sees every value of the other factor)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Features '
            'that carry the token only, each token seen at 2 of 16 positions: its position cannot '
            'be read; The token code is at the odd positions only (12 tokens x 40 positions, '
            'float32, LDA); each even position; Other sizes, shares of readable values (drawn at '
            'random, the others seen with few labels), probes, id',
        ('held_out_accuracy', 'shallow: trained and tested on every row'):
            'only inputs the public checks do not use show it; the hidden tests that do: Features '
            'that carry the token only, each token seen at 2 of 16 positions: its position cannot '
            'be read; The position code is on the odd tokens only (40 tokens x 10 positions); each'
            ' even token comes at 2; The token code is at the odd positions only (12 tokens x 40 '
            'positions, float32, LDA); each even position; Other sizes, shares of readable values '
            '(drawn at random, the others seen with few labels), probes, id',
        ('held_out_accuracy', 'no ValueError for a single value of the other factor'):
            'only inputs the public checks do not use show it; the hidden tests that do: read '
            'neither "token" nor "position", or one value only of the other factor: ValueError',
        ('first_coordinates_carry',
         'shallow: always the position (the first dimensions are unusable for tokens)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Widths '
            'from 32 to 512 and scales on both sides of the crossover: each answer matches the '
            "grader's measurement",
        ('first_coordinates_carry', 'shallow: always the token'):
            'only inputs the public checks do not use show it; the hidden tests that do: Widths '
            'from 32 to 512 and scales on both sides of the crossover: each answer matches the '
            "grader's measurement",
        ('first_coordinates_carry',
         'shallow: the crossover of the earlier prose, scale = sqrt(d_model / 2), at every width'):
            'only inputs the public checks do not use show it; the hidden tests that do: Widths '
            'from 32 to 512 and scales on both sides of the crossover: each answer matches the '
            "grader's measurement",
        ('first_coordinates_carry',
         'shallow: the crossover measured at d_model = 128 (scale 8.5) used at every width'):
            'only inputs the public checks do not use show it; the hidden tests that do: Widths '
            'from 32 to 512 and scales on both sides of the crossover: each answer matches the '
            "grader's measurement",
        ('first_coordinates_carry',
         'shallow: the factor of Vaswani et al. as the crossover (scale >= sqrt(d_model))'):
            'only inputs the public checks do not use show it; the hidden tests that do: Widths '
            'from 32 to 512 and scales on both sides of the crossover: each answer matches the '
            "grader's measurement",
        ('overlap_ratio', 'shallow: a constant (tables are as unrelated as random ones)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Positions'
            ' in coordinates the tokens never use (width 8): no overlap at all; Position rows that'
            ' are token rows plus a little noise (width 2): more overlap than chance; Independent '
            'tables and positions built from the token rows, any sizes, dtypes and layouts',
        ('overlap_ratio', 'no ValueError for tables of different widths'):
            'only inputs the public checks do not use show it; the hidden tests that do: Tables of'
            ' widths 8 and 6: ValueError',
        ('pattern_term',
         'shallow: a constant (the position -> position term, as in the trained models)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'pattern planted in another term, any numbers of sequences and tokens, dtypes and '
            'layouts; Terms (4, T, T) of one sequence, the pattern in term 1',
        ('is_fair_protocol', 'a constant verdict (True)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Protocols'
            ' whose fit sees the rows they score (fitted on all rows; scored on the training half)'
            ' leak; A protocol that reports the best of 10 random splits leaks (each split alone '
            'is fair: only the mean of many; A protocol that trains on the first half of the rows '
            'as given and tests on the second leaks when the rows; The verdict depends on the '
            'protocol: a fair split and a protocol that scores rows it was fitted on do not',
        ('is_fair_protocol', "the verdict read from the protocol's name"):
            'only inputs the public checks do not use show it; the hidden tests that do: Protocols'
            ' whose fit sees the rows they score (fitted on all rows; scored on the training half)'
            ' leak; A protocol that reports the best of 10 random splits leaks (each split alone '
            'is fair: only the mean of many; A protocol that trains on the first half of the rows '
            'as given and tests on the second leaks when the rows; The verdict depends on the '
            'protocol: a fair split and a protocol that scores rows it was fitted on do not',
        ('is_fair_protocol', "the verdict read from the protocol's docstring"):
            'only inputs the public checks do not use show it; the hidden tests that do: Protocols'
            ' whose fit sees the rows they score (fitted on all rows; scored on the training half)'
            ' leak; A protocol that reports the best of 10 random splits leaks (each split alone '
            'is fair: only the mean of many; A protocol that trains on the first half of the rows '
            'as given and tests on the second leaks when the rows; The verdict depends on the '
            'protocol: a fair split and a protocol that scores rows it was fitted on do not',
        ('is_fair_protocol', 'the verdict guessed from repr, dir, __dict__ and type'):
            'only inputs the public checks do not use show it; the hidden tests that do: Protocols'
            ' whose fit sees the rows they score (fitted on all rows; scored on the training half)'
            ' leak; A protocol that reports the best of 10 random splits leaks (each split alone '
            'is fair: only the mean of many; A protocol that trains on the first half of the rows '
            'as given and tests on the second leaks when the rows; The verdict depends on the '
            'protocol: a fair split and a protocol that scores rows it was fitted on do not',
        ('share_width', 'the even split of section 3 (d/2 random coordinates each)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Held-out '
            'settings: the smaller accuracy is 0.78 or more on average; Held-out settings: the '
            'smaller accuracy is 0.85 or more on average',
        ('share_width', 'one knob searched: the split, with unit-scale random positions'):
            'only inputs the public checks do not use show it; the hidden tests that do: Held-out '
            'settings: the smaller accuracy is 0.85 or more on average',
        ('share_width', 'one knob searched: the position scale at the even split'):
            'only inputs the public checks do not use show it; the hidden tests that do: Held-out '
            'settings: the smaller accuracy is 0.85 or more on average',
    },
    '04_rotary_embeddings': {
        ('rope_base_for_context',
         'a walk up a finer grid (steps of 1e-3 in log base), early stopping'):
            'only inputs the public checks do not use show it; the hidden tests that do: Unseen L '
            'and head_dim: the criterion holds, at most 1.00001 times the smallest base that meets '
            'it',
        ('matching_pairs',
         "every offset scanned for every pair (the docstring's definition, transcribed)"):
            'only inputs the public checks do not use show it; the hidden tests that do: Level 0.5 '
            'at other bases, widths and contexts (8k and 128k at base 5e5, 2k at 1e4 with head_dim '
            '64, ...,; Levels other than 0.5 (0.9, 0.2, 0.7, 0.95, 0.8), at several bases, widths '
            'and contexts (up to 10^9 tokens); Any context, base from 1e2 to 1e7, head width and '
            "level: the count matches the grader's scan; level 0 or 1, an odd head_dim, base 1, "
            'context_length 0: ValueError (context_length 1 still gets a count)',
        ('rope_is_faithful',
         'one prefill against a reference built from the config (no decode, no longer input)'):
            'only inputs the public checks do not use show it; the hidden tests that do: On the '
            'dynamic NTK configs: faithful RoPE is faithful; the three dynamic NTK bugs are broken;'
            ' Decode steps rotated one position too far (prefill right) are broken, on any config',
        ('rope_inv_freq', 'no check for odd head_dim'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_inv_freq, with the valid edge cases beside them',
        ('rope_rotation_matrix', 'default layout half-split (interleaved=False)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Called '
            'without the layout argument, R_m is the one your interleaved=True gives (the '
            'documented default)',
        ('rope_cos_sin', 'attention_factor scales the angles'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'attention_factor=0.5 multiplies both tables (not the angles)',
        ('rope_cos_sin', 'attention_factor on cos only'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'attention_factor=0.5 multiplies both tables (not the angles)',
        ('rope_cos_sin', 'tables in float64'):
            'only inputs the public checks do not use show it; the hidden tests that do: Half-'
            'width float32 tables (..., T, head_dim // 2) for (6,) and (2, 5) position_ids, '
            'float64 inv_freq',
        ('apply_rope', 'arithmetic in bfloat16'):
            'only inputs the public checks do not use show it; the hidden tests that do: bfloat16 '
            'and float16 x are rotated in float32 and rounded once; float64 x keeps float64 '
            'accuracy',
        ('apply_rope', 'tables not broadcast over heads'):
            'only inputs the public checks do not use show it; the hidden tests that do: Tables '
            'with one dimension fewer than x get a head axis in front of T, for 4-D and 5-D x',
        ('layout_permutation', 'no check for odd head_dim'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of layout_permutation, with the valid edge cases beside them',
        ('alibi_slopes', 'naive formula for every head count'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any head '
            'count, power of two or not (12: the 8-head slopes, then every other slope of 16 '
            'heads): get_slopes',
        ('alibi_slopes', 'fills with the odd slopes of 2p heads'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any head '
            'count, power of two or not (12: the 8-head slopes, then every other slope of 16 '
            'heads): get_slopes',
        ('alibi_slopes', 'rounds up to the next power of two and truncates'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any head '
            'count, power of two or not (12: the 8-head slopes, then every other slope of 16 '
            'heads): get_slopes',
        ('alibi_bias', 'naive slopes inlined'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'number of heads (12: the slopes of a head count that is not a power of two) and '
            'tokens (1 included)',
        ('diagonal_spread', 'square offsets only'):
            'only inputs the public checks do not use show it; the hidden tests that do: Grids of '
            '3 x 7 and 7 x 3 (queries x keys): every diagonal counts, including those only wide '
            'grids have',
        ('diagonal_spread', 'returns a tensor'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'spread is a Python float (not a 0-d tensor), for float32 and float64 grids',
        ('rope_cost', 'matrices per batch and head'):
            'only inputs the public checks do not use show it; the hidden tests that do: The bytes'
            ' moved by one pass, both methods, any sizes and bytes_per_element (4 when it is not '
            'given)',
        ('rope_cost', 'output write missing'):
            'only inputs the public checks do not use show it; the hidden tests that do: The bytes'
            ' moved by one pass, both methods, any sizes and bytes_per_element (4 when it is not '
            'given)',
        ('rope_cost', 'full-width tables'):
            'only inputs the public checks do not use show it; the hidden tests that do: The bytes'
            ' moved by one pass, both methods, any sizes and bytes_per_element (4 when it is not '
            'given)',
        ('rope_cost', 'bytes_per_element ignored'):
            'only inputs the public checks do not use show it; the hidden tests that do: The bytes'
            ' moved by one pass, both methods, any sizes and bytes_per_element (4 when it is not '
            'given)',
        ('rope_cost', 'no validation'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_cost, with the valid edge cases beside them',
        ('rope_inv_freq', 'only odd head_dim rejected: 0 gives an empty tensor'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_inv_freq, with the valid edge cases beside them',
        ('rope_inv_freq', 'base not validated (base 0 gives inf)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_inv_freq, with the valid edge cases beside them',
        ('rope_inv_freq', 'base truncated to an integer'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'even head_dim (2 included) and any base, whole or not: base^(-2j/d) with the base as '
            'given',
        ('rope_rotation_matrix', 'position cast to int'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'position (fractional, negative, up to 5000), head_dim, base and layout: R_m from '
            'float64 angles',
        ('rope_rotation_matrix', 'angles in float32'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'position (fractional, negative, up to 5000), head_dim, base and layout: R_m from '
            'float64 angles',
        ('rope_rotation_matrix', 'theta taken from the float32 rope_inv_freq'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any '
            'position (fractional, negative, up to 5000), head_dim, base and layout: R_m from '
            'float64 angles',
        ('rope_rotation_matrix', 'base not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_rotation_matrix, with the valid edge cases beside them',
        ('rope_rotation_matrix', 'returns float64'):
            'only inputs the public checks do not use show it; the hidden tests that do: R_0 is a '
            'float32 (head_dim, head_dim) tensor, in both layouts (head_dim 12)',
        ('rope_cos_sin', 'positions cast to integers'):
            'only inputs the public checks do not use show it; the hidden tests that do: Positions'
            ' of any rank and dtype (fractional m/s kept as given), any inv_freq, attention_factor'
            ' and layout',
        ('rope_cos_sin', 'torch.outer: only 1-D positions work'):
            'only inputs the public checks do not use show it; the hidden tests that do: Positions'
            ' of any rank and dtype (fractional m/s kept as given), any inv_freq, attention_factor'
            ' and layout',
        ('rope_cos_sin', 'only the 0-d check: bool positions and 2-D inv_freq accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_cos_sin, with the valid edge cases beside them',
        ('apply_rope', 'rotates x in place'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'apply_rope returns a new tensor and leaves x, cos and sin as they were (the caller '
            'still needs x)',
        ('apply_rope', "Meta's view_as_complex on a non-contiguous x"):
            'only inputs the public checks do not use show it; the hidden tests that do: Any float'
            ' dtype of x, both layouts, views of x and of the tables, broadcasting, head_dim 2',
        ('apply_rope', 'always float32 arithmetic: float64 x loses precision'):
            'only inputs the public checks do not use show it; the hidden tests that do: bfloat16 '
            'and float16 x are rotated in float32 and rounded once; float64 x keeps float64 '
            'accuracy',
        ('apply_rope', 'head axis inserted at dim 1 instead of in front of T'):
            'only inputs the public checks do not use show it; the hidden tests that do: Tables '
            'with one dimension fewer than x get a head axis in front of T, for 4-D and 5-D x',
        ('apply_rope', 'returns float32 for half-precision x'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            "output has x's shape and dtype for float16, bfloat16, float32 and float64 x (float32 "
            'tables)',
        ('apply_rope', 'integer x not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of apply_rope, with the valid edge cases beside them',
        ('apply_rope', 'cos and sin shapes not compared'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of apply_rope, with the valid edge cases beside them',
        ('apply_rope', 'tables with another T not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of apply_rope, with the valid edge cases beside them',
        ('apply_rope',
         'broadcast checked only after computing: a batch mismatch raises RuntimeError'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of apply_rope, with the valid edge cases beside them',
        ('layout_permutation', 'only odd head_dim rejected: 0 and -4 give empty tensors'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of layout_permutation, with the valid edge cases beside them',
        ('layout_permutation', 'cut from a fixed 128-wide permutation'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'even head_dim (2, not a multiple of 4, beyond 128): [0, 2, ..., 1, 3, ...]',
        ('alibi_slopes', 'negative head counts accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of alibi_slopes, with the valid edge cases beside them',
        ('alibi_slopes', 'fractional head counts truncated'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of alibi_slopes, with the valid edge cases beside them',
        ('alibi_slopes', 'extra slopes of 2p heads only up to 8 extra heads'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any head '
            'count, power of two or not (12: the 8-head slopes, then every other slope of 16 '
            'heads): get_slopes',
        ('alibi_bias', 'only seq_len == 0 rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of alibi_bias, with the valid edge cases beside them',
        ('alibi_bias', 'slopes inlined without checking num_heads'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of alibi_bias, with the valid edge cases beside them',
        ('diagonal_spread', "differences taken in the grid's dtype"):
            'only inputs the public checks do not use show it; the hidden tests that do: Any grid '
            'size (1 x n included), float dtype and memory layout: the float64 spread of the '
            'values given',
        ('diagonal_spread', 'diagonals read from the storage (wrong for views)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any grid '
            'size (1 x n included), float dtype and memory layout: the float64 spread of the '
            'values given',
        ('diagonal_spread', 'empty grids not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of diagonal_spread, with the valid edge cases beside them',
        ('diagonal_spread', 'only integer grids rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of diagonal_spread, with the valid edge cases beside them',
        ('rope_cost', 'bytes_per_element not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_cost, with the valid edge cases beside them',
        ('rope_cost', 'only zero sizes rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_cost, with the valid edge cases beside them',
        ('rope_cost', 'sizes that are not whole accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_cost, with the valid edge cases beside them',
        ('rope_cost', 'table bytes counted with d / 2 (floats)'):
            'only inputs the public checks do not use show it; the hidden tests that do: flops and'
            ' bytes are Python ints (exact counts), intensity a float, for both methods',
        ('rope_base_for_context', "the public case hard-coded, Llama 2's 10000 elsewhere"):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('matching_pairs', "a constant: the public case's answer"):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('matching_pairs', 'the public case hard-coded, the wavelength count elsewhere'):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('matching_pairs', 'level ignored: a wavelength of at least 6 L (right at level 0.5 only)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Levels '
            'other than 0.5 (0.9, 0.2, 0.7, 0.95), at several bases, widths and contexts; Any '
            "context, base from 1e2 to 1e7, head width and level: the count matches the grader's "
            'scan',
        ('matching_pairs', 'level not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: level 0 '
            'or 1, an odd head_dim, base 1, context_length 0: ValueError (context_length 1 still '
            'gets a count)',
        ('rope_is_faithful', 'a detector that rejects everything'):
            'only inputs the public checks do not use show it; the hidden tests that do: Faithful '
            'RoPE (float32 rotate_half, float64 complex pairs) on the plain configs, both layouts,'
            ' is faithful; On the linear configs (positions divided by the factor): faithful RoPE '
            'is faithful, scaling ignored broken; On the dynamic NTK configs: faithful RoPE is '
            'faithful; the three dynamic NTK bugs are broken',
        ('rope_is_faithful', 'prefill compared with the reference, decode never tried'):
            'only inputs the public checks do not use show it; the hidden tests that do: Decode '
            'steps rotated one position too far (prefill right) are broken, on any config',
        ('rope_is_faithful', 'dynamic scaling never tried beyond the original context'):
            'only inputs the public checks do not use show it; the hidden tests that do: On the '
            'dynamic NTK configs: faithful RoPE is faithful; the three dynamic NTK bugs are broken',
        ('rope_is_faithful', 'linear scaling left out of the reference'):
            'only inputs the public checks do not use show it; the hidden tests that do: On the '
            'linear configs (positions divided by the factor): faithful RoPE is faithful, scaling '
            'ignored broken',
        ('rope_is_faithful',
         'max_position_embeddings taken as the original context of dynamic scaling'):
            'only inputs the public checks do not use show it; the hidden tests that do: On the '
            'dynamic NTK configs: faithful RoPE is faithful; the three dynamic NTK bugs are broken',
    },
    '05_context_extension': {
        ('linear_scaling_inv_freq', 'integer scale'):
            'only inputs the public checks do not use show it; the hidden tests that do: A '
            'fractional scale (2.5) divides exactly by 2.5, for head_dim 64 and base 5e5',
        ('linear_scaling_inv_freq', 'no validation'):
            'only inputs the public checks do not use show it; the hidden tests that do: scale '
            '0.999 or 0, and an inv_freq that is not 1-D (0-D, (1, 4), (2, 2, 2)), raise '
            'ValueError;',
        ('passkey_prompt', 'needle mid-sentence at the raw index'):
            'only inputs the public checks do not use show it; the hidden tests that do: For '
            'lengths 128 to 4096 and depths 0.1 to 0.9 the needle sits at a sentence boundary near'
            ' depth * n_filler',
        ('passkey_prompt', 'rng ignored'):
            'only inputs the public checks do not use show it; the hidden tests that do: The same '
            'seed gives the same prompt, and another seed another filler',
        ('passkey_prompt', 'one sentence repeated'):
            'only inputs the public checks do not use show it; the hidden tests that do: The same '
            'seed gives the same prompt, and another seed another filler',
        ('passkey_accuracy', 'substring match'):
            'only inputs the public checks do not use show it; the hidden tests that do: An answer'
            " whose first number only contains the passkey ('9' + passkey, passkey + '0') is wrong",
        ('passkey_accuracy', 'only one trial per cell'):
            'only inputs the public checks do not use show it; the hidden tests that do: A model '
            'right on even passkeys only scores about one half over 130 trials, a multiple of '
            '1/130',
        ('passkey_accuracy', 'no regex, whole output compared'):
            "only inputs the public checks do not use show it; the hidden tests that do: 'The pass"
            " key is 12345.' style answers (text, then the number, then a period) count as correct",
        ('linear_scaling_inv_freq', "divides in the input's half precision"):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'head_dim, base, scale >= 1, input dtype and memory layout: theta / s to float32 '
            'precision',
        ('linear_scaling_inv_freq', 'accepts a 0-D inv_freq (checks only dim > 1)'):
            'only inputs the public checks do not use show it; the hidden tests that do: scale '
            '0.999 or 0, and an inv_freq that is not 1-D (0-D, (1, 4), (2, 2, 2)), raise '
            'ValueError;',
        ('ntk_aware_base', 'base not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '31, 2, 0 or -4, base 0 or -1e4, and scale 0.999 or 0 raise ValueError; head_dim 4, '
            'base 0.5',
        ('ntk_aware_base', 'base <= 1 rejected (the docstring allows any base > 0)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '31, 2, 0 or -4, base 0 or -1e4, and scale 0.999 or 0 raise ValueError; head_dim 4, '
            'base 0.5',
        ('ntk_aware_base', 'head_dim 4 rejected (head_dim <= 4)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '31, 2, 0 or -4, base 0 or -1e4, and scale 0.999 or 0 raise ValueError; head_dim 4, '
            'base 0.5',
        ('ntk_aware_base', 'scale truncated to an integer'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'even head_dim >= 6, base > 1 and scale >= 1: b * s^(d / (d - 2))',
        ('dynamic_ntk_base', 'original length not validated (ZeroDivisionError on 0)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '33, 2 or 0, base 0 or -1, scale 0.999, seq_len 0 or -5 and original length 0 or -128 '
            'raise',
        ('dynamic_ntk_base', 'only odd head_dim rejected (head_dim 2 divides by zero)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '33, 2 or 0, base 0 or -1, scale 0.999, seq_len 0 or -5 and original length 0 or -128 '
            'raise',
        ('dynamic_ntk_base', 'base not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '33, 2 or 0, base 0 or -1, scale 0.999, seq_len 0 or -5 and original length 0 or -128 '
            'raise',
        ('dynamic_ntk_base', 'seq_len checked with == 0 (negative lengths accepted)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '33, 2 or 0, base 0 or -1, scale 0.999, seq_len 0 or -5 and original length 0 or -128 '
            'raise',
        ('dynamic_ntk_base', 'scale truncated to an integer'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'head_dim, base, scale and L_orig, with seq_len below, at or above L_orig: the float64'
            ' formula',
        ('yarn_inv_freq', 'high clamped to head_dim // 2 - 1'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            "head_dim, base, scale, L_orig and betas, also where the ramp's ends clamp",
        ('yarn_inv_freq', 'no + 0.001 when the ends coincide (0 / 0)'):
            'only inputs the public checks do not use show it; the hidden tests that do: L_orig 5 '
            'puts both ends of the ramp at pair 0 (high += 0.001): pair 0 kept, every other one '
            'divided',
        ('yarn_inv_freq', 'head_dim 2 accepted (only odd head_dim rejected)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '31, 2 or 0, base 1 or 0.5, scale 0.999, original length 0 or -4096, and betas not',
        ('yarn_inv_freq', 'base only checked > 0'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '31, 2 or 0, base 1 or 0.5, scale 0.999, original length 0 or -4096, and betas not',
        ('yarn_inv_freq', 'beta_slow > 0 not checked'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '31, 2 or 0, base 1 or 0.5, scale 0.999, original length 0 or -4096, and betas not',
        ('yarn_inv_freq', 'high not clamped to head_dim - 1'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            "head_dim, base, scale, L_orig and betas, also where the ramp's ends clamp",
        ('yarn_inv_freq', 'scale truncated to an integer'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            "head_dim, base, scale, L_orig and betas, also where the ramp's ends clamp",
        ('llama3_inv_freq', 'low_freq_factor > 0 not checked'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '63, 0 or -2, base 1 or 0.5, scale 0.999, original length 0 or -8192, and factors not',
        ('llama3_inv_freq', 'original length not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '63, 0 or -2, base 1 or 0.5, scale 0.999, original length 0 or -8192, and factors not',
        ('llama3_inv_freq', 'head_dim 2 rejected (head_dim < 4)'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '63, 0 or -2, base 1 or 0.5, scale 0.999, original length 0 or -8192, and factors not',
        ('llama3_inv_freq', 'base not validated'):
            'only inputs the public checks do not use show it; the hidden tests that do: head_dim '
            '63, 0 or -2, base 1 or 0.5, scale 0.999, original length 0 or -8192, and factors not',
        ('llama3_inv_freq', 'scale truncated to an integer'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'head_dim >= 4, base, scale, L_orig and 0 < low_freq_factor < high_freq_factor',
        ('passkey_prompt', 'needle length hard-coded for a 5-digit passkey'):
            'only inputs the public checks do not use show it; the hidden tests that do: A one-'
            "digit passkey (7) is written as it is: 'The pass key is 7. '",
        ('passkey_prompt', 'tie goes to the later boundary'):
            'only inputs the public checks do not use show it; the hidden tests that do: For any '
            'length, depth and passkey: exact length, filler sentences, one needle at the nearest '
            'boundary',
        ('passkey_accuracy', 'accuracy rounded to 2 decimals'):
            'only inputs the public checks do not use show it; the hidden tests that do: A model '
            'right on even passkeys only scores about one half over 130 trials, a multiple of '
            '1/130',
        ('passkey_accuracy', 'empty depths not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: trials 0 '
            'or -3, and an empty list of lengths or of depths, raise ValueError; one trial does '
            'not',
        ('passkey_accuracy', 'trials checked with == 0'):
            'only inputs the public checks do not use show it; the hidden tests that do: trials 0 '
            'or -3, and an empty list of lengths or of depths, raise ValueError; one trial does '
            'not',
        ('extension_inv_freq', "the notebook's YaRN (beta_fast 5, 0.1 ln s + 1)"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', 'YaRN with the fitted temperature 0.082 ln s + 1'):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', "YaRN with the sweep's best attention factor at s = 8 (1.15)"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', 'YaRN with beta_fast 2'):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.80 nats/char (the middle threshold); s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', "YaRN with the paper's beta_fast 32 on a model trained at 128"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq',
         "YaRN's ramp as the paper writes it (linear in the turns r_i), beta 5 and 1"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', 'NTK-aware base without a temperature'):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', "NTK-aware base with YaRN's temperature"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', 'Llama 3 (low_freq_factor 1, high_freq_factor 4)'):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.80 nats/char (the middle threshold); s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq', "Llama 3 with YaRN's temperature"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('extension_inv_freq',
         "Llama 3 with high_freq_factor moved to 1.79 and YaRN's temperature"):
            'only inputs the public checks do not use show it; the hidden tests that do: s = 8 at '
            '1,024 on 16 hidden windows: below 1.80 nats/char (the middle threshold); s = 8 at '
            '1,024 on 16 hidden windows: below 1.66 nats/char (the top threshold: no rule of the '
            'notebook reaches it); s = 4 at 512 on 16 other hidden windows: below 1.61 nats/char '
            '(the top threshold: no rule of the notebook reaches it)',
        ('diagnose_rope', 'float32 tables compared exactly (ratio > s without a tolerance)'):
            'only inputs the public checks do not use show it; the hidden tests that do: A correct'
            " Llama 3.1 module (d 128, b 5e5, s 8, L_orig 8192) is 'correct'",
        ('diagnose_rope', 'original length checked on the slowest pair only'):
            'only inputs the public checks do not use show it; the hidden tests that do: YaRN and '
            'Llama 3 given the extended length as L_orig (d 128, b 5e5, L_orig 8192 and d 96): '
            "'wrong original length'",
        ('diagnose_rope', 'reversed ramp looked for in the kept pairs only (pair 0 divided?)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Llama 3 '
            "with the blend weights swapped (kept and divided pairs still right): 'reversed ramp'",
        ('diagnose_rope',
         'original length tested before scaled twice (a doubled YaRN or Llama 3 is misnamed)'):
            'only inputs the public checks do not use show it; the hidden tests that do: PI, YaRN '
            "and Llama 3 that divide the positions by s as well as the frequencies: 'scaled twice'",
        ('positional_pairs', 'the public case hard-coded (pairs 0, 3 and 9)'):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('positional_pairs', 'constant parts taken for position (the rotation ignored)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Constant '
            'parts on pairs too slow to turn over the offsets asked about are a bias, not position',
        ('positional_pairs', 'an absolute threshold on the logits (0.1)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The same '
            "roles with the head's parts 0.05 or 20 times as large (logits 400 times smaller or "
            'larger)',
        ('retrieval_beyond_control',
         'the public case hard-coded: the first depth of the second length'):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('retrieval_beyond_control',
         'means without intervals: method above the control, control at most chance'):
            'only inputs the public checks do not use show it; the hidden tests that do: A method '
            "whose mean is above the control's by chance alone retrieves nothing, and a control "
            'whose mean',
        ('retrieval_beyond_control', 'chance taken as 0.1 whatever the score'):
            'only inputs the public checks do not use show it; the hidden tests that do: Another '
            'score: four symbols of four values each (chance 0.25), modest but certain gains (64 '
            'prompts)',
        ('retrieval_beyond_control',
         'the interval of one standard deviation of the prompts, not of the mean'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            "'difference' holds each cell's mean method-minus-control score and a 95% interval "
            'around it',
        ('retrieval_beyond_control', 'a 68% interval (one standard error)'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            "'difference' holds each cell's mean method-minus-control score and a 95% interval "
            'around it',
        ('retrieval_beyond_control', 'the difference taken as control minus method'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            "'difference' holds each cell's mean method-minus-control score and a 95% interval "
            'around it',
        ('fine_tune_verdict', "the chapter's verdicts hard-coded"):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            "windows' difficulty, shared by both arms, is far larger than the difference (4 x 40 "
            "and 3 x 60): a; The runs of each arm differ by more than the windows' noise (3 x 50 "
            "and 5 x 30): the arms' means differ by; Noisy windows and many runs (8 x 30 and 6 x "
            '40): over all runs and windows the difference is certain; Any number of runs (2 to 6)'
            ' and windows (10 to 120), a win either way or a tie. The traps (shared',
        ('fine_tune_verdict', 'the public cases hard-coded'):
            "it hard-codes the public case's answer: only the hidden cases differ from it",
        ('fine_tune_verdict', "windows unpaired: each arm's window means as independent samples"):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            "windows' difficulty, shared by both arms, is far larger than the difference (4 x 40 "
            'and 3 x 60): a',
        ('fine_tune_verdict', "a tie when any one run's interval over the windows reaches zero"):
            'only inputs the public checks do not use show it; the hidden tests that do: Noisy '
            'windows and many runs (8 x 30 and 6 x 40): over all runs and windows the difference '
            'is certain',
        ('fine_tune_verdict',
         'the interval of one standard deviation of the runs, not of their mean'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            "'difference' is A's mean loss minus B's over all runs and windows and a 95% interval "
            'around it (10 x 50, the',
    },
    '06_gpu_rope_kernel': {
        ('rope_forward_triton', "every sequence uses the first sequence's offset"):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'position_ids as a (B,) tensor of offsets [2, 7, 300]: each sequence starts at its own '
            'position',
        ('rope_forward_triton',
         'position tensors checked on the host with .item() (a synchronisation per call)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Position '
            "tensors are the caller's contract, clamped on the device: ids 64 and -3 with 64-row "
            'tables; No host-device synchronisation on any path: no .item(), .tolist(), .cpu(), '
            '.numpy(), bool() or int() of',
        ('rope_forward_triton', 'position tensors checked on the host with .tolist()'):
            'only inputs the public checks do not use show it; the hidden tests that do: Position '
            "tensors are the caller's contract, clamped on the device: ids 64 and -3 with 64-row "
            'tables; No host-device synchronisation on any path: no .item(), .tolist(), .cpu(), '
            '.numpy(), bool() or int() of',
        ('rope_forward_triton',
         'positions outside the tables not clamped (rows past the tables read)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Position '
            "tensors are the caller's contract, clamped on the device: ids 64 and -3 with 64-row "
            'tables',
        ('rope_forward_triton', 'cu_seqlens ignored: the packed tokens rotated as one sequence'):
            'only inputs the public checks do not use show it; the hidden tests that do: The varlen'
            ' layout (total_tokens, H, D): cu_seqlens of sequences 3, 1 and 6 tokens long, alone '
            'and with',
        ('rope_forward_triton',
         "Hugging Face tables: every batch element given the first one's angles"):
            'only inputs the public checks do not use show it; the hidden tests that do: Hugging '
            "Face's full-width (B, T, D) cos/sin at packed positions, read as they are, both pair "
            'layouts',
        ('rope_forward_triton',
         "Hugging Face tables, interleaved: pair j's angle read at column j instead of 2j"):
            'only inputs the public checks do not use show it; the hidden tests that do: Hugging '
            "Face's full-width (B, T, D) cos/sin at packed positions, read as they are, both pair "
            'layouts',
        ('rope_backward_triton', 'cu_seqlens not passed on'):
            'only inputs the public checks do not use show it; the hidden tests that do: Varlen '
            'gradients (total_tokens, H, D) with cu_seqlens and (S,) offsets: rotated by -θ at each'
            " token's",
        ('rope_rows_triton', 'unmasked tail: tokens past seq_len are read and written'):
            'only inputs the public checks do not use show it; the hidden tests that do: Masks: '
            'any T (1, 37 and 65 past a block), any even D (2, 6, 80: D/2 no power of two), '
            'float32/float16',
        ('rope_rows_triton', 'pair mask missing: BLOCK_D2 lanes past D/2 touch the next channels'):
            'only inputs the public checks do not use show it; the hidden tests that do: Masks: '
            'any T (1, 37 and 65 past a block), any even D (2, 6, 80: D/2 no power of two), '
            'float32/float16',
        ('rope_rows_triton', 'rotates x in place'):
            'only inputs the public checks do not use show it; the hidden tests that do: x is '
            'unchanged after the call: the result is a new tensor',
        ('rope_heads_triton', 'strides ignored: a contiguous layout assumed'):
            'only inputs the public checks do not use show it; the hidden tests that do: Non-'
            'contiguous q and k: transposed views of (B, T, H, D) storage, head slices of a fused '
            '(B, T, 3 H, D)',
        ('rope_heads_triton', "k rotated with q's head count"):
            'only inputs the public checks do not use show it; the hidden tests that do: Any B, '
            'H_q and H_k (GQA; more k heads: k rotated with its own count), T, even D and dtype, '
            'contiguous;',
        ('rope_heads_triton', 'head mask missing: BLOCK_H lanes past the head count touch memory'):
            'only inputs the public checks do not use show it; the hidden tests that do: Any B, '
            'H_q and H_k (GQA; more k heads: k rotated with its own count), T, even D and dtype, '
            'contiguous;',
        ('rope_heads_triton', 'batch stride of q used for k'):
            'only inputs the public checks do not use show it; the hidden tests that do: Non-'
            'contiguous q and k: transposed views of (B, T, H, D) storage, head slices of a fused '
            '(B, T, 3 H, D)',
        ('rope_heads_triton', 'rotates q and k in place'):
            'only inputs the public checks do not use show it; the hidden tests that do: q, k, cos'
            ' and sin are unchanged after the call (contiguous and transposed inputs)',
        ('rope_interleaved_triton',
         'interleaved mask counts pairs, not channels: half of each row left unwritten'):
            'only inputs the public checks do not use show it; the hidden tests that do: Head dims'
            ' 64, 80 and 128, both layouts (the flag picks the pairs), T = 37',
        ('rope_forward_triton', 'position_ids ignored (tokens rotated at 0..T-1)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Packed '
            'batch: position_ids (2, 16) restart at 0 where each packed sequence begins',
        ('rope_forward_triton',
         'pass-through channels modified: interleaved rotation masked by head_dim, not rotary_dim'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'inplace=True: q and k hold the rotation afterwards; half-split, and interleaved with '
            'rotary_dim 24 of 32',
        ('rope_forward_triton', 'in place by default'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'default (inplace=False) leaves q, k, cos and sin untouched, with positions and '
            'partial rotary',
        ('rope_forward_triton', 'inplace=True ignored (always a new tensor)'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'inplace=True: q and k hold the rotation afterwards; half-split, and interleaved with '
            'rotary_dim 24 of 32',
        ('rope_forward_triton', 'strides ignored: a contiguous layout assumed'):
            'only inputs the public checks do not use show it; the hidden tests that do: Strides, '
            'both layouts: transposed q and k (T = 45, head_dim 80, 3 q heads and 1 k head, '
            'default positions),',
        ('rope_backward_triton', 'layout flag ignored'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'Interleaved, 6 query heads and 2 key heads, T = 97, head_dim 80: rotation by -θ',
        ('rope_backward_triton', 'gradients rotated in place'):
            'only inputs the public checks do not use show it; the hidden tests that do: grad_q '
            'and grad_k are unchanged after the call (not rotated in place)',
        ('rope_backward_triton', 'position_ids not passed on (gradients rotated at 0..T-1)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Packed '
            'position_ids (half-split) or an int offset of 30 (interleaved), rotary_dim=16 of 48: '
            '-θ at each',
        ('rope_backward_triton', 'rotary_dim not passed on'):
            'only inputs the public checks do not use show it; the hidden tests that do: Packed '
            'position_ids (half-split) or an int offset of 30 (interleaved), rotary_dim=16 of 48: '
            '-θ at each',
        ('TritonRoPE', 'layout not kept for backward'):
            'only inputs the public checks do not use show it; the hidden tests that do: '
            'Interleaved, 6 query and 2 key heads, T = 97, head_dim 80: the layout reaches '
            'backward too',
        ('TritonRoPE', 'position_ids not kept for backward'):
            'only inputs the public checks do not use show it; the hidden tests that do: apply(q, '
            'k, cos, sin, False, position_ids, 16): positions ((B, T) ids, an int offset) and '
            'rotary_dim',
        ('rope_rows_triton', 'dtype not checked: a float64 x is accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_rows_triton, with the valid edge cases beside them',
        ('rope_rows_triton', 'contiguity not checked: a non-contiguous x is read as if contiguous'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_rows_triton, with the valid edge cases beside them',
        ('rope_rows_triton', 'returns float32 for a float16 x'):
            'only inputs the public checks do not use show it; the hidden tests that do: float16 x'
            ' (64, 64) with float32 tables: a float16 result within one float16 rounding',
        ('rope_rows_triton',
         "only the tables' width checked: tables with other row counts or sin unlike cos accepted"):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_rows_triton, with the valid edge cases beside them',
        ('rope_heads_triton', 'unit channel stride assumed (x.stride(3) ignored)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Non-'
            'contiguous q and k: transposed views of (B, T, H, D) storage, head slices of a fused '
            '(B, T, 3 H, D)',
        ('rope_heads_triton', "tables' column stride ignored (cos.stride(1) taken as 1)"):
            'only inputs the public checks do not use show it; the hidden tests that do: Non-'
            'contiguous q and k: transposed views of (B, T, H, D) storage, head slices of a fused '
            '(B, T, 3 H, D)',
        ('rope_heads_triton',
         'only head_dim compared: k with another batch size or seq_len accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_heads_triton, with the valid edge cases beside them',
        ('rope_heads_triton', 'odd head_dim not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_heads_triton, with the valid edge cases beside them',
        ('rope_heads_triton', 'dtype not checked: float64 q and k accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_heads_triton, with the valid edge cases beside them',
        ('rope_interleaved_triton', "no input validation (step 2's checks not carried over)"):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_interleaved_triton, with the valid edge cases beside '
            'them',
        ('rope_interleaved_triton', 'interleaved load assumes a unit channel stride'):
            'only inputs the public checks do not use show it; the hidden tests that do: Both '
            'layouts with stride 2 along the channels (NaN between): the interleaved load uses '
            'x.stride(3) too',
        ('rope_interleaved_triton', "only cos's shape checked (sin unlike cos accepted)"):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_interleaved_triton, with the valid edge cases beside '
            'them',
        ('rope_interleaved_triton', 'dtype not checked: float64 q and k accepted'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_interleaved_triton, with the valid edge cases beside '
            'them',
        ('rope_forward_triton', 'float position_ids cast to int64 instead of rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'only int64 position_ids accepted (int32 rejected)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'shape of a (B, T) position_ids not checked'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'negative positions not rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'off by one: tables of exactly offset + T rows rejected'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'odd head_dim rejected even with an even rotary_dim'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'rotary_dim 0 accepted (only the upper bound checked)'):
            'only inputs the public checks do not use show it; the hidden tests that do: The '
            'promised ValueErrors of rope_forward_triton, with the valid edge cases beside them',
        ('rope_forward_triton', 'half-split tile assumes a unit channel stride'):
            'only inputs the public checks do not use show it; the hidden tests that do: Strides, '
            'both layouts: transposed q and k (T = 45, head_dim 80, 3 q heads and 1 k head, '
            'default positions),',
        ('rope_backward_triton', 'float32 gradients returned for half-precision gradients'):
            'only inputs the public checks do not use show it; the hidden tests that do: float16 '
            'gradients, half-split, grouped heads: float16 results within one rounding',
        ('rope_backward_triton', 'an int offset dropped: gradients rotated from position 0'):
            'only inputs the public checks do not use show it; the hidden tests that do: Packed '
            'position_ids (half-split) or an int offset of 30 (interleaved), rotary_dim=16 of 48: '
            '-θ at each',
        ('TritonRoPE', 'rotary_dim not kept for backward'):
            'only inputs the public checks do not use show it; the hidden tests that do: apply(q, '
            'k, cos, sin, False, position_ids, 16): positions ((B, T) ids, an int offset) and '
            'rotary_dim',
        ('TritonRoPE', 'position_ids saved with save_for_backward (an int offset cannot be)'):
            'only inputs the public checks do not use show it; the hidden tests that do: apply(q, '
            'k, cos, sin, False, position_ids, 16): positions ((B, T) ids, an int offset) and '
            'rotary_dim',
        ('TritonRoPE', 'forward computes in float32 (q.float()): float32 outputs for half inputs'):
            'only inputs the public checks do not use show it; the hidden tests that do: float16 q'
            ' and k: float16 outputs and gradients within one float16 rounding',
        ('sector_traffic', 'sectors counted once over the whole launch, not per instruction'):
            'only inputs the public checks do not use show it; the hidden tests that do: A gather '
            'reading the same and nearby elements several times, and two stride-2 loads of the '
            'same float16',
        ('sector_traffic', "each instruction's bytes divided by sector_bytes, rounded up"):
            'only inputs the public checks do not use show it; the hidden tests that do: float16 '
            'rows that start 1 element past a sector boundary: a row of 16 touches 2 sectors, not '
            '1',
        ('sector_traffic', 'the sector size fixed at 32 bytes'):
            'only inputs the public checks do not use show it; the hidden tests that do: The same '
            'split-pairs kernel counted in 128-byte cache lines instead of 32-byte sectors',
        ('sector_traffic', 'efficiency inverted (requested over used)'):
            'only inputs the public checks do not use show it; the hidden tests that do: Copies '
            '(any width and misalignment) and both pair kernels, float32 or float16, 32- or '
            '64-byte sectors',
    },
    '07_rope_in_practice': {
        ('rope_init_fn', 'dynamic: the length not raised to max_position_embeddings'):
            'only inputs the public checks do not use show it; the hidden tests that do: `dynamic` '
            '(factor 2, head_dim 64, max 2048) at no length, 1024 (unchanged) and 8192 (rescaled)',
        ('rope_init_fn', "yarn: truncate ignored (the ramp's ends always rounded)"):
            'only inputs the public checks do not use show it; the hidden tests that do: `yarn` with '
            'truncate false: gpt-oss-20b (head_dim 64, base 1.5e5, factor 32, L_orig 4096)',
        ('rope_init_fn', 'yarn: mscale and mscale_all_dim ignored'):
            'only inputs the public checks do not use show it; the hidden tests that do: `yarn` attention'
            ' factors: DeepSeek-V3 (mscale = mscale_all_dim: 1.0), mscale 0.707 against 1, and a',
        ('rope_init_fn', 'longrope: long factors from the original length on (>= instead of >)'):
            'only inputs the public checks do not use show it; the hidden tests that do: `longrope`, '
            'Phi-3.5-mini (head_dim 96): short factors up to 4096 tokens (and with no length), long past '
            'it',
        ('rope_init_fn', 'longrope: attention factor over ln max_position_embeddings'):
            'only inputs the public checks do not use show it; the hidden tests that do: `longrope` '
            'attention factor sqrt(1 + ln s / ln L_orig): Phi-3.5 (s = 32), s = 4 given, and s <= 1',
        ('rope_init_fn', "proportional: the exponent over the rotating features (partial rotation's ladder)"):
            'only inputs the public checks do not use show it; the hidden tests that do: `proportional`: '
            "Gemma 4's global layers (head_dim 512, p 0.25), p 0.5 with factor 2, and p 0 (nothing turns)",
        ('rope_init_fn', 'proportional: only the rotating pairs returned'):
            'only inputs the public checks do not use show it; the hidden tests that do: `proportional`: '
            "Gemma 4's global layers (head_dim 512, p 0.25), p 0.5 with factor 2, and p 0 (nothing "
            'turns); Every type over head sizes, bases and factors (p = 1; partial rotation and each '
            "key's edge cases are",
        ('layer_rope_parameters', 'NoPE when i % interval == 0'):
            'only inputs the public checks do not use show it; the hidden tests that do: SmolLM3-style: '
            'no list, no_rope_layer_interval 4 over 12 layers (and an empty list means the same); Random '
            'layer counts, NoPE lists or intervals, and flat or per-type parameters',
        ('layer_rope_parameters', 'no_rope_layer_interval ignored'):
            'only inputs the public checks do not use show it; the hidden tests that do: SmolLM3-style: '
            'no list, no_rope_layer_interval 4 over 12 layers (and an empty list means the same); Random '
            'layer counts, NoPE lists or intervals, and flat or per-type parameters',
        ('mla_query_key', 'positions taken as 0..T-1'):
            'only inputs the public checks do not use show it; the hidden tests that do: Positions '
            "100..106 (a decoding step reads positions past 0), DeepSeek-V3's d_rope 64 on 2 heads",
    },
}
