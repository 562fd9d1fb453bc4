// Parquet footer statistics of many local files in one call, with no Python object per file.
//
// Loaded with ctypes by storage_handler/stats/native_footers.py, which compiles this file against the Parquet
// library inside the installed pyarrow wheel (pyarrow.get_include(), libparquet.so.NNNN). Why that library and
// not a footer parser of our own: the rules that decide whether a footer's statistics can be used at all --
// which min/max fields a column order selects, writers with known-bad statistics (PARQUET-251/686), values that
// do not decode -- are then pyarrow's own, by construction, so this path reports exactly what
// ``pyarrow.parquet.read_metadata`` reports, only without the Python work per column chunk.
//
// Per file (in the order given): the record count, which of this call's distinct schemas it has
// (SchemaDescriptor::Equals, the comparison behind pyarrow's ParquetSchema.equals), and per row group and leaf
// column one "chunk" row: the row group's rows, flags, the null count and the plain-encoded min and max; and
// the footer's created_by (the writer, whose known mistakes storage_handler/stats/footers/writers.py judges).
// A file whose footer cannot be read gets num_rows = -1; the caller reads it again through pyarrow, which then
// reports its own error text. Nothing here throws across the C boundary.
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

// flags of a chunk row (same values in native_footers.py)
constexpr uint8_t kStatsSet = 1;      // ColumnChunkMetaData::is_stats_set()
constexpr uint8_t kHasNullCount = 2;  // Statistics::HasNullCount()
constexpr uint8_t kHasMinMax = 4;     // Statistics::HasMinMax()
constexpr uint8_t kError = 8;         // reading this chunk's metadata or statistics threw

struct Result {
  std::vector<int64_t> num_rows, first_chunk, schema_file;
  std::vector<int32_t> schema, row_groups, schema_leaves;
  std::vector<int64_t> rg_rows, null_count, min_offsets{0}, max_offsets{0}, schema_offsets{0};
  std::vector<uint8_t> flags;
  std::string min_data, max_data, schema_data;  // schema_data: each distinct schema's first footer, serialized
  std::vector<int64_t> writer_offsets{0};       // per file: its footer's created_by, in writer_data
  std::string writer_data;
  std::vector<std::shared_ptr<parquet::FileMetaData>> schemas;  // the first file of each distinct schema
};

void add_chunk(Result& r, int64_t rows, uint8_t flags, int64_t nulls, const std::string& lo,
               const std::string& hi) {
  r.rg_rows.push_back(rows);
  r.flags.push_back(flags);
  r.null_count.push_back(nulls);
  r.min_data += lo;
  r.max_data += hi;
  r.min_offsets.push_back(static_cast<int64_t>(r.min_data.size()));
  r.max_offsets.push_back(static_cast<int64_t>(r.max_data.size()));
}

// One column chunk, as pyarrow's ColumnChunkMetaData.is_stats_set / .statistics would report it.
void read_chunk(Result& r, const parquet::RowGroupMetaData& rg, int leaf, int64_t rows,
                parquet::Type::type physical) {
  static const std::string kNone;
  if (leaf >= rg.num_columns()) {  // pyarrow: IndexError from RowGroupMetaData.column
    add_chunk(r, rows, kError, 0, kNone, kNone);
    return;
  }
  try {
    auto chunk = rg.ColumnChunk(leaf);
    if (chunk->type() != physical) {  // a chunk claiming another type than its column: decoding it is unsafe
      add_chunk(r, rows, kError, 0, kNone, kNone);
      return;
    }
    if (!chunk->is_stats_set()) {
      add_chunk(r, rows, 0, 0, kNone, kNone);
      return;
    }
    auto stats = chunk->statistics();  // decodes min/max: may throw for a value of the wrong width
    uint8_t flags = kStatsSet;
    int64_t nulls = 0;
    if (stats->HasNullCount()) {
      flags |= kHasNullCount;
      nulls = stats->null_count();
    }
    if (stats->HasMinMax() && stats->physical_type() == parquet::Type::INT96) {
      flags |= kHasMinMax;  // pyarrow gives no raw INT96 value (and its sort order is undefined): no bytes
      add_chunk(r, rows, flags, nulls, kNone, kNone);
    } else if (stats->HasMinMax()) {
      flags |= kHasMinMax;
      add_chunk(r, rows, flags, nulls, stats->EncodeMin(), stats->EncodeMax());
    } else {
      add_chunk(r, rows, flags, nulls, kNone, kNone);
    }
  } catch (const std::exception&) {
    add_chunk(r, rows, kError, 0, kNone, kNone);
  }
}

int schema_of(Result& r, const std::shared_ptr<parquet::FileMetaData>& md, int64_t file) {
  for (size_t i = 0; i < r.schemas.size(); ++i) {
    if (md->schema()->Equals(*r.schemas[i]->schema())) return static_cast<int>(i);
  }
  r.schemas.push_back(md);
  r.schema_file.push_back(file);
  r.schema_data += md->SerializeToString();  // for pyarrow's schema object, without reading the file again
  r.schema_offsets.push_back(static_cast<int64_t>(r.schema_data.size()));
  r.schema_leaves.push_back(md->num_columns());
  return static_cast<int>(r.schemas.size() - 1);
}

void add_file(Result& r, const std::shared_ptr<parquet::FileMetaData>& md, int64_t file) {
  r.first_chunk.push_back(static_cast<int64_t>(r.rg_rows.size()));
  if (md != nullptr) r.writer_data += md->created_by();
  r.writer_offsets.push_back(static_cast<int64_t>(r.writer_data.size()));
  if (md == nullptr) {
    r.num_rows.push_back(-1);
    r.schema.push_back(-1);
    r.row_groups.push_back(0);
    return;
  }
  int s = schema_of(r, md, file);
  int leaves = r.schema_leaves[s];
  int groups = md->num_row_groups();
  // The file's rows are its row groups' (what Spark reads and counts), not the footer's own num_rows field, which
  // a broken writer can set to anything: 0 there made every filter rule the file out.
  size_t count_at = r.num_rows.size();
  r.num_rows.push_back(0);
  bool counted = true;
  r.schema.push_back(s);
  r.row_groups.push_back(groups);
  for (int g = 0; g < groups; ++g) {
    std::unique_ptr<parquet::RowGroupMetaData> rg;
    try {
      rg = md->RowGroup(g);
    } catch (const std::exception&) {
      rg = nullptr;
    }
    int64_t rows = rg ? rg->num_rows() : 0;
    if (rg) r.num_rows[count_at] += rows; else counted = false;
    for (int leaf = 0; leaf < leaves; ++leaf) {
      if (rg) {
        read_chunk(r, *rg, leaf, rows, md->schema()->Column(leaf)->physical_type());
      } else {
        add_chunk(r, 1, kError, 0, std::string(), std::string());
      }
    }
  }
  if (!counted) r.num_rows[count_at] = md->num_rows();  // its chunks are errors: the file is unreadable anyway
}

// A local file's footer, read exactly as pyarrow reads it (ParquetFileReader::OpenFile); null when unreadable.
std::shared_ptr<parquet::FileMetaData> open_footer(const std::string& path) {
  try {
    return parquet::ParquetFileReader::OpenFile(path, /*memory_map=*/false)->metadata();
  } catch (const std::exception&) {
    return nullptr;
  }
}

// A footer pyarrow already read, serialized again (pyarrow's FileMetaData pickles as its Thrift bytes).
std::shared_ptr<parquet::FileMetaData> parse_footer(const uint8_t* data, int64_t size) {
  try {
    // the uint32_t* overload: the only one every pyarrow since 14 has (footers are far below 4 GiB)
    uint32_t length = static_cast<uint32_t>(size);
    return parquet::FileMetaData::Make(data, &length);
  } catch (const std::exception&) {
    return nullptr;
  }
}

template <typename T>
T* copy_out(const std::vector<T>& v) {
  T* out = static_cast<T*>(std::malloc(v.size() * sizeof(T) + 1));
  if (out != nullptr && !v.empty()) std::memcpy(out, v.data(), v.size() * sizeof(T));
  return out;
}

uint8_t* copy_out(const std::string& s) {
  auto* out = static_cast<uint8_t*>(std::malloc(s.size() + 1));
  if (out != nullptr && !s.empty()) std::memcpy(out, s.data(), s.size());
  return out;
}

}  // namespace

extern "C" {

// Columns of the answer (see the file comment); every pointer is malloc'ed, released by hsh_footers_free.
typedef struct {
  int64_t files, chunks;
  int32_t schemas;
  int64_t* num_rows;     // per file; -1: the footer could not be read
  int32_t* schema;       // per file: index of its distinct schema (-1: unreadable)
  int32_t* row_groups;   // per file
  int64_t* first_chunk;  // per file: its first chunk row (file-major, then row group, then leaf)
  int64_t* schema_file;  // per distinct schema: the first file that has it
  int64_t* rg_rows;      // per chunk: rows of its row group
  uint8_t* flags;        // per chunk: kStatsSet | kHasNullCount | kHasMinMax | kError
  int64_t* null_count;
  int64_t* min_offsets;  // chunks + 1 offsets into min_data (Arrow's large_binary layout)
  int64_t* max_offsets;
  uint8_t* min_data;
  uint8_t* max_data;
  int64_t* schema_offsets;  // schemas + 1 offsets into schema_data
  uint8_t* schema_data;     // per distinct schema: its first file's footer, serialized
  int64_t* writer_offsets;  // files + 1 offsets into writer_data
  uint8_t* writer_data;     // per file: its footer's created_by (empty when unreadable)
} hsh_footers;

}  // extern "C"

namespace {

int finish(Result& r, int64_t count, hsh_footers* out) {
  out->files = count;
  out->chunks = static_cast<int64_t>(r.rg_rows.size());
  out->schemas = static_cast<int32_t>(r.schemas.size());
  out->num_rows = copy_out(r.num_rows);
  out->schema = copy_out(r.schema);
  out->row_groups = copy_out(r.row_groups);
  out->first_chunk = copy_out(r.first_chunk);
  out->schema_file = copy_out(r.schema_file);
  out->rg_rows = copy_out(r.rg_rows);
  out->flags = copy_out(r.flags);
  out->null_count = copy_out(r.null_count);
  out->min_offsets = copy_out(r.min_offsets);
  out->max_offsets = copy_out(r.max_offsets);
  out->min_data = copy_out(r.min_data);
  out->max_data = copy_out(r.max_data);
  out->schema_offsets = copy_out(r.schema_offsets);
  out->schema_data = copy_out(r.schema_data);
  out->writer_offsets = copy_out(r.writer_offsets);
  out->writer_data = copy_out(r.writer_data);
  return 0;
}

}  // namespace

extern "C" {

// Read the footers of `count` local files whose paths are `paths` (NUL-separated); 0, or ENOMEM.
int hsh_read_footers(const char* paths, int64_t count, hsh_footers* out) {
  std::memset(out, 0, sizeof(*out));
  try {
    Result r;
    const char* p = paths;
    for (int64_t i = 0; i < count; ++i) {
      std::string path(p);
      p += path.size() + 1;
      add_file(r, open_footer(path), i);
    }
    return finish(r, count, out);
  } catch (const std::exception&) {
    return ENOMEM;
  }
}

// The same for `count` serialized footers: footer i is data[offsets[i] .. offsets[i + 1]).
int hsh_parse_footers(const uint8_t* data, const int64_t* offsets, int64_t count, hsh_footers* out) {
  std::memset(out, 0, sizeof(*out));
  try {
    Result r;
    for (int64_t i = 0; i < count; ++i) {
      add_file(r, parse_footer(data + offsets[i], offsets[i + 1] - offsets[i]), i);
    }
    return finish(r, count, out);
  } catch (const std::exception&) {
    return ENOMEM;
  }
}

void hsh_footers_free(hsh_footers* out) {
  void* pointers[] = {out->num_rows,    out->schema,      out->row_groups,     out->first_chunk,
                      out->schema_file, out->rg_rows,     out->flags,          out->null_count,
                      out->min_offsets, out->max_offsets, out->min_data,       out->max_data,
                      out->schema_offsets, out->schema_data, out->writer_offsets, out->writer_data};
  for (void* ptr : pointers) std::free(ptr);
  std::memset(out, 0, sizeof(*out));
}

}  // extern "C"
