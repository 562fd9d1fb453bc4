/* Walk one local folder recursively in C: registration's listing of a big table (list_data_files) without a
 * Python object per file. storage_handler/storage/native_listing.py loads this with ctypes (compiled into the
 * same library as listing.c) and turns the buffers into Arrow and numpy arrays.
 *
 * The answer is exactly LocalStorage.walk(root, skip=is_hidden)'s (storage_handler/storage/local.py), sorted by
 * relative path in byte order; a change to either side must be made to both:
 *   - names starting with '_' or '.', or ending in '._COPYING_', are hidden at every level, files and folders
 *     alike (is_hidden in storage_handler/hive_paths.py); the root itself is never judged;
 *   - a folder is an entry that is a folder without following symlinks (DirEntry.is_dir(follow_symlinks=False)):
 *     it is descended; a symlink to a folder is not descended, and as it is not a regular file once followed it
 *     is not listed either;
 *   - anything else is a file when it is a regular file once symlinks are followed (DirEntry.stat()); a dangling
 *     symlink, or an entry or folder removed during the walk (ENOENT, ENOTDIR), is left out;
 *   - any other error (EACCES on a folder, ELOOP on a symlink loop...) stops the walk, as the Python walk
 *     raises: the errno is returned and error_path names the relative path that failed;
 *   - a path of PATH_MAX bytes or more returns HSH_CANNOT_ANSWER: Python would stat it by its full path (and
 *     fail), where this walk stats relative to the folder, so the caller lists in Python.
 * Output: per file its relative path ('/'-separated), size, mtime and ctime in ns, and the number of its folder;
 * folders are numbered in the order of their first file and their relative paths ("" for the root) given once,
 * so the caller works once per folder (partition values), not once per file.
 *
 * Order: each folder's entries are sorted by name, a folder's name compared as if followed by '/', then walked
 * depth first. That is the byte order of the full relative paths: everything under folder "a" starts "a/",
 * which sorts against a sibling name exactly as the key "a/" does.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#define HSH_CANNOT_ANSWER (-1)

typedef struct {
    char *data;
    int64_t len, cap; /* bytes */
} hsh_buf;

typedef struct {
    hsh_buf paths;          /* relative file paths, concatenated */
    hsh_buf offsets;        /* int32: files + 1 offsets into paths (Arrow's string layout) */
    hsh_buf sizes;          /* int64 per file */
    hsh_buf mtimes_ns;      /* int64 per file */
    hsh_buf ctimes_ns;      /* int64 per file */
    hsh_buf folder_of;      /* int32 per file: the number of its folder */
    hsh_buf folders;        /* relative paths of the folders that hold files, concatenated */
    hsh_buf folder_offsets; /* int32: folders + 1 offsets into folders */
    char *error_path;       /* on error: the relative path that failed (NUL-terminated) */
} hsh_walk;

typedef struct {
    const char *name;
    int64_t name_at; /* offset in the folder's names buffer (name is set once the buffer stops moving) */
    uint32_t len;
    uint8_t is_dir;
    int64_t size, mtime_ns, ctime_ns;
} item;

typedef struct {
    hsh_walk *out;
    char path[PATH_MAX]; /* root, '/', then the relative path of the folder being walked */
    size_t base;         /* where the relative path starts in path */
    int32_t folders;
} walker;

static int append(hsh_buf *b, const void *src, size_t n) {
    if (b->len + (int64_t)n > b->cap) {
        int64_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (int64_t)n) cap *= 2;
        char *bigger = realloc(b->data, (size_t)cap);
        if (!bigger) return ENOMEM;
        b->data = bigger;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += (int64_t)n;
    return 0;
}

static int append_offset(hsh_buf *offsets, int64_t end) {
    if (end > INT32_MAX) return HSH_CANNOT_ANSWER; /* Arrow string offsets are 32-bit */
    int32_t at = (int32_t)end;
    return append(offsets, &at, sizeof at);
}

/* Byte order of the names, a folder's name read as if followed by '/' (see "Order" above). */
static int by_walk_order(const void *a, const void *b) {
    const item *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    if (c || x->len == y->len) return c;
    if (x->len < y->len) return x->is_dir && (unsigned char)y->name[n] < '/' ? 1 : -1;
    return y->is_dir && (unsigned char)x->name[n] < '/' ? -1 : 1;
}

/* Where an entry's name starts in path, for the folder whose relative path is rel_len long (its '/' put back). */
static size_t child_at(walker *w, size_t rel_len) {
    if (rel_len == 0) return w->base;
    w->path[w->base + rel_len] = '/';
    return w->base + rel_len + 1;
}

static int fail(walker *w, size_t rel_len, int err) {
    free(w->out->error_path);
    w->out->error_path = strndup(w->path + w->base, rel_len);
    return err;
}

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

/* Read one folder's visible entries into items (names in names): folders by their entry type, files stat'ed. */
static int read_folder(walker *w, int fd, size_t rel_len, hsh_buf *items, hsh_buf *names) {
    DIR *dir = fdopendir(fd);
    if (!dir) { int e = errno; close(fd); return fail(w, rel_len, e); }
    size_t prefix = child_at(w, rel_len);
    int err = 0;
    struct dirent *d;
    errno = 0;
    while ((d = readdir(dir)) != NULL) {
        const char *name = d->d_name;
        if (hidden(name)) { errno = 0; continue; }
        size_t len = strlen(name);
        if (prefix + len >= PATH_MAX) { err = HSH_CANNOT_ANSWER; break; }
        item it = {NULL, names->len, (uint32_t)len, 0, 0, 0, 0};
        struct stat st;
        int is_dir = d->d_type == DT_DIR;
        if (d->d_type == DT_UNKNOWN) { /* the file system gives no type: ask without following links */
            if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                is_dir = S_ISDIR(st.st_mode);
            } else if (errno != ENOENT) { /* DirEntry.is_dir() ignores a missing entry only */
                memcpy(w->path + prefix, name, len);
                err = fail(w, prefix - w->base + len, errno);
                break;
            }
        }
        if (is_dir) {
            it.is_dir = 1;
        } else if (fstatat(fd, name, &st, 0) != 0) {
            if (errno == ENOENT || errno == ENOTDIR) { errno = 0; continue; } /* dangling, or removed meanwhile */
            memcpy(w->path + prefix, name, len);
            err = fail(w, prefix - w->base + len, errno);
            break;
        } else if (!S_ISREG(st.st_mode)) {
            errno = 0;
            continue; /* a symlink to a folder, a fifo, a socket... */
        } else {
            it.size = (int64_t)st.st_size;
            it.mtime_ns = ns(st.st_mtim);
            it.ctime_ns = ns(st.st_ctim);
        }
        if ((err = append(names, name, len)) || (err = append(items, &it, sizeof it))) break;
        errno = 0;
    }
    if (!err && errno) err = fail(w, rel_len, errno);
    closedir(dir);
    return err;
}

static int emit(walker *w, const item *it, size_t rel_len, int32_t *folder) {
    hsh_walk *out = w->out;
    size_t at = child_at(w, rel_len);
    int err;
    if (*folder < 0) {
        *folder = w->folders++;
        if ((err = append(&out->folders, w->path + w->base, rel_len))) return err;
        if ((err = append_offset(&out->folder_offsets, out->folders.len))) return err;
    }
    memcpy(w->path + at, it->name, it->len);
    if ((err = append(&out->paths, w->path + w->base, at - w->base + it->len))) return err;
    if ((err = append_offset(&out->offsets, out->paths.len))) return err;
    if ((err = append(&out->sizes, &it->size, sizeof it->size))) return err;
    if ((err = append(&out->mtimes_ns, &it->mtime_ns, sizeof it->mtime_ns))) return err;
    if ((err = append(&out->ctimes_ns, &it->ctime_ns, sizeof it->ctime_ns))) return err;
    return append(&out->folder_of, folder, sizeof *folder);
}

/* Walk the folder whose relative path is the rel_len bytes at path + base. The folder is closed before its
 * subfolders are walked, so a deep tree holds one descriptor at a time. */
static int walk_folder(walker *w, size_t rel_len) {
    w->path[rel_len ? w->base + rel_len : w->base - 1] = '\0'; /* the root alone, or root/rel */
    int fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rel_len == 0) w->path[w->base - 1] = '/';
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 0; /* removed while we walked (or no root at all) */
        return fail(w, rel_len, errno);
    }
    hsh_buf items = {0}, names = {0};
    int err = read_folder(w, fd, rel_len, &items, &names);
    size_t n = (size_t)items.len / sizeof(item);
    item *all = (item *)items.data;
    for (size_t i = 0; i < n; i++) all[i].name = names.data + all[i].name_at;
    if (!err && n) qsort(all, n, sizeof(item), by_walk_order);
    int32_t folder = -1;
    for (size_t i = 0; i < n && !err; i++) {
        if (!all[i].is_dir) { err = emit(w, &all[i], rel_len, &folder); continue; }
        size_t at = child_at(w, rel_len);
        memcpy(w->path + at, all[i].name, all[i].len);
        err = walk_folder(w, at - w->base + all[i].len);
    }
    free(items.data);
    free(names.data);
    return err;
}

/* root: a local folder path. Returns 0; HSH_CANNOT_ANSWER (list in Python); or an errno, with out->error_path. */
int hsh_walk_tree(const char *root, hsh_walk *out) {
    memset(out, 0, sizeof(*out));
    walker *w = malloc(sizeof(walker));
    if (!w) return ENOMEM;
    w->out = out;
    w->folders = 0;
    size_t root_len = strlen(root);
    int err = 0;
    if (root_len + 1 >= PATH_MAX) {
        err = HSH_CANNOT_ANSWER;
    } else {
        memcpy(w->path, root, root_len);
        w->path[root_len] = '/';
        w->base = root_len + 1;
        int32_t zero = 0;
        if (!(err = append(&out->offsets, &zero, sizeof zero)) &&
            !(err = append(&out->folder_offsets, &zero, sizeof zero)))
            err = walk_folder(w, 0);
    }
    free(w);
    return err;
}

void hsh_walk_free(hsh_walk *out) {
    hsh_buf *bufs[] = {&out->paths, &out->offsets, &out->sizes, &out->mtimes_ns, &out->ctimes_ns,
                       &out->folder_of, &out->folders, &out->folder_offsets};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]->data);
    free(out->error_path);
    memset(out, 0, sizeof(*out));
}
