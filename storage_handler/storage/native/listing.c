/* List the visible regular files directly in many local folders, in one call and without a Python object per
 * file: the query path of a big table lists every kept partition on every query (storage_handler/storage/
 * native_listing.py loads this with ctypes and turns the buffers into Arrow arrays).
 *
 * Per folder, in the order given: the entries that are not hidden (is_hidden: '_' or '.' first, or '._COPYING_'
 * last) and that are regular files once symlinks are followed (fstatat without AT_SYMLINK_NOFOLLOW), sorted by
 * name in byte order. An entry removed between the directory read and its stat is left out; a folder that does not exist (or is not
 * a folder) is reported as missing; any other error stops the call with its errno and the folder's number.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* is_hidden (storage_handler/hive_paths.py): '_' or '.' first (and "." / ".."), or ending in "._COPYING_" */
static int hidden(const char *name) {
    static const char copying[] = "._COPYING_";
    size_t len = strlen(name), tail = sizeof copying - 1;
    return name[0] == '_' || name[0] == '.' || (len >= tail && memcmp(name + len - tail, copying, tail) == 0);
}

typedef struct {
    int64_t count;      /* files listed */
    int64_t names_len;  /* bytes used in names */
    char *names;        /* file names, concatenated (no separators) */
    int32_t *offsets;   /* count + 1 offsets into names (Arrow's string layout) */
    int64_t *sizes;
    int64_t *mtimes_ns;
    int64_t *ctimes_ns;
    int32_t *per_folder; /* files listed per folder */
    uint8_t *missing;    /* 1: the folder does not exist or is not a folder */
    int32_t error_folder; /* on error: the folder whose listing failed */
    int64_t cap, names_cap;
} hsh_listing;

typedef struct {
    const char *name;
    size_t len;
    int64_t size, mtime_ns, ctime_ns;
} entry;

static int by_name(const void *a, const void *b) {
    const entry *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int grow(hsh_listing *out, int64_t need_files, int64_t need_bytes) {
    if (need_files > out->cap) {
        int64_t cap = out->cap ? out->cap : 1024;
        while (cap < need_files) cap *= 2;
        void *o = realloc(out->offsets, (cap + 1) * sizeof(int32_t));
        if (!o) return ENOMEM;
        out->offsets = o;
        void *s = realloc(out->sizes, cap * sizeof(int64_t));
        if (!s) return ENOMEM;
        out->sizes = s;
        void *m = realloc(out->mtimes_ns, cap * sizeof(int64_t));
        if (!m) return ENOMEM;
        out->mtimes_ns = m;
        void *c = realloc(out->ctimes_ns, cap * sizeof(int64_t));
        if (!c) return ENOMEM;
        out->ctimes_ns = c;
        out->cap = cap;
    }
    if (need_bytes > out->names_cap) {
        int64_t cap = out->names_cap ? out->names_cap : 65536;
        while (cap < need_bytes) cap *= 2;
        if (cap > INT32_MAX) return EOVERFLOW; /* Arrow string offsets are 32-bit */
        void *n = realloc(out->names, cap);
        if (!n) return ENOMEM;
        out->names = n;
        out->names_cap = cap;
    }
    return 0;
}

static int list_one(const char *folder, int32_t index, hsh_listing *out) {
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) { out->missing[index] = 1; return 0; }
        return errno;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) { int e = errno; close(fd); return e; }
    entry *found = NULL;
    size_t n = 0, cap = 0;
    int err = 0;
    struct dirent *d;
    errno = 0;
    while ((d = readdir(dir)) != NULL) {
        const char *name = d->d_name;
        if (hidden(name)) continue;
        struct stat st;
        if (fstatat(fd, name, &st, 0) != 0) {
            if (errno == ENOENT || errno == ENOTDIR) { errno = 0; continue; }
            err = errno;
            break;
        }
        if (!S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            entry *bigger = realloc(found, cap * sizeof(entry));
            if (!bigger) { err = ENOMEM; break; }
            found = bigger;
        }
        size_t len = strlen(name);
        char *copy = malloc(len);
        if (!copy) { err = ENOMEM; break; }
        memcpy(copy, name, len);
        found[n].name = copy;
        found[n].len = len;
        found[n].size = (int64_t)st.st_size;
        found[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        found[n].ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
        n++;
        errno = 0;
    }
    if (!err && errno) err = errno;
    closedir(dir);
    if (!err) {
        qsort(found, n, sizeof(entry), by_name);
        int64_t bytes = 0;
        for (size_t i = 0; i < n; i++) bytes += (int64_t)found[i].len;
        err = grow(out, out->count + (int64_t)n, out->names_len + bytes);
    }
    for (size_t i = 0; i < n; i++) {
        if (!err) {
            int64_t k = out->count++;
            memcpy(out->names + out->names_len, found[i].name, found[i].len);
            out->offsets[k] = (int32_t)out->names_len;
            out->names_len += (int64_t)found[i].len;
            out->offsets[k + 1] = (int32_t)out->names_len;
            out->sizes[k] = found[i].size;
            out->mtimes_ns[k] = found[i].mtime_ns;
            out->ctimes_ns[k] = found[i].ctime_ns;
        }
        free((void *)found[i].name);
    }
    free(found);
    if (!err) out->per_folder[index] = (int32_t)n;
    return err;
}

/* folders: n NUL-terminated paths, one after another. Returns 0, or an errno (out->error_folder says where). */
int hsh_list_folders(const char *folders, int32_t n, hsh_listing *out) {
    memset(out, 0, sizeof(*out));
    out->per_folder = calloc(n > 0 ? n : 1, sizeof(int32_t));
    out->missing = calloc(n > 0 ? n : 1, 1);
    if (!out->per_folder || !out->missing) return ENOMEM;
    int err = grow(out, 1, 1);
    if (err) return err;
    out->offsets[0] = 0;
    const char *folder = folders;
    for (int32_t i = 0; i < n; i++) {
        err = list_one(folder, i, out);
        if (err) { out->error_folder = i; return err; }
        folder += strlen(folder) + 1;
    }
    return 0;
}

void hsh_listing_free(hsh_listing *out) {
    free(out->names);
    free(out->offsets);
    free(out->sizes);
    free(out->mtimes_ns);
    free(out->ctimes_ns);
    free(out->per_folder);
    free(out->missing);
    memset(out, 0, sizeof(*out));
}
