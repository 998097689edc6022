/* pt2/pt2.h — saving and loading exported programs as PyTorch's PT2 archive (`.pt2`).
 * Layer: pt2 (above core; uses libzip and cJSON). The one header lua/ includes from this layer.
 *
 * The format is PyTorch's, as torch.export.save writes it since torch 2.8, with torch 2.9's raw
 * weight files (docs/PT2.md):
 *   <root>/archive_format          "pt2"
 *   <root>/archive_version         "0"
 *   <root>/byteorder               "little"
 *   <root>/.data/version           "6"
 *   <root>/models/<name>.json      the serialized ExportedProgram (torch/_export/serde/schema.py,
 *                                  SCHEMA_VERSION major 8)
 *   <root>/data/weights/<name>_weights_config.json    {"config": {fqn: PayloadMeta}}
 *   <root>/data/weights/weight_<i>                    raw little-endian storage bytes
 *   <root>/data/constants/<name>_constants_config.json, data/constants/tensor_<i>
 *   <root>/data/sample_inputs/<name>.pt               empty (no example inputs)
 * Loading also reads torch 2.8's weights as one torch.save pickle (data/weights/<name>.pt) and
 * the layout of torch 2.5 - 2.7 (serialized_exported_program.json beside torch.save zips of the
 * state dict and constants), decoding only the pickle opcodes torch.save uses for dicts of
 * tensors (pt2_pickle.c). */
#ifndef FX_PT2_H
#define FX_PT2_H

#include <stddef.h>

#include "core/fx.h"

/* The schema version fxdb writes, and the majors it reads. */
#define FX_PT2_SCHEMA_MAJOR 8
#define FX_PT2_SCHEMA_MINOR 17

/* Writes p to `path` as a PT2 archive holding one model named "model". The file appears whole
 * or not at all (libzip writes a temporary file and renames it on success). fxdb-only facts (the
 * raw graph, mutation records, no_grad marks) go into the schema's "custom" metadata, which
 * PyTorch carries along and fxdb reads back. Errors: FX_EIO naming the path and libzip's reason;
 * FX_ENOTIMPL for a value the schema cannot hold (named with its node); FX_EARG naming a weight
 * or constant on the meta device (no values to save); FX_ENOMEM. p is borrowed. */
int fx_pt2_save(const fx_program *p, const char *path, fx_err *err);

/* Reads the archive at `path` (current or earlier layout, see above) into a new program (*out,
 * owned by the caller: fx_program_free). On any error *out stays NULL and nothing is leaked.
 * Errors (FX_EIO): not a zip / truncated, wrong archive_format, no model, unknown schema major
 * (names it and the supported one), JSON of the wrong shape (names the file and the JSON path,
 * e.g. "models/model.json: graph_module.graph.nodes[3].inputs[0]: expected an object"), a
 * weight whose byte size disagrees with its meta, an argument kind fxdb does not know, a name
 * that escapes the archive. A program may call ATen ops fxdb has no kernel for: it loads (the
 * nodes keep the target and have no opdef); fx_interp refuses to run it, naming them all. */
int fx_pt2_load(const char *path, fx_program **out, fx_err *err);
/* The same from a buffer holding the archive's bytes (borrowed for the call). `what` names it in
 * messages ("model.pt2"). */
int fx_pt2_load_buffer(const void *data, size_t len, const char *what, fx_program **out,
                       fx_err *err);

/* Writes a zip archive at `path` holding n entries (names[i] -> data[i] of lens[i] bytes,
 * stored uncompressed), replacing the file. A plain zip writer for tests that build archives by
 * hand. FX_EIO on failure. */
int fx_pt2_write_zip(const char *path, const char *const *names, const void *const *data,
                     const size_t *lens, int n, fx_err *err);

#endif
