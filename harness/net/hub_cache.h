/* harness/net/hub_cache.h: private to net/: writing the hub cache: folders that never go through
 * a symlink, refs, snapshot links to blobs, atomic files, and the lock of a blob's download. */
#ifndef NET_HUB_CACHE_H
#define NET_HUB_CACHE_H

#include "net.h"

/* mkdir -p; 0 or 2 after a message */
int mkdir_p(const char *path);
/* the folders of rel below base, one by one; an existing part that is not a real folder (a
 * symlink, a file) is refused. 0 or 2 after a message */
int mkdir_below(const char *base, const char *rel);
/* text into path through path.PID.tmp and rename; 0 or 2 */
int write_file_atomic(const char *path, const char *text);
/* REPO/refs/REVISION holding commit (nothing when the revision is the commit); 0 or 2 */
int hub_write_ref(const char *repo_dir, const char *revision, const char *commit);
/* REPO/snapshots/COMMIT/FILE -> ../../blobs/ETAG (relative), replacing what was there; 0 or 2 */
int hub_link_snapshot(const char *repo_dir, const char *commit, const char *file,
                      const char *etag);
/* waits for and takes CACHE/.locks/REPO_FOLDER/ETAG.lock (flock, as huggingface_hub's filelock),
 * with a note on stderr while another process holds it; the kernel releases it when its holder
 * dies. *fd the lock (-1 on a file system without flock: a warning). 0 or 2 after a message */
int hub_lock_blob(const char *cache, const char *repo_dir, const char *etag, const char *what,
                  int *fd);
/* releases a lock of hub_lock_blob (fd -1: none) */
void hub_unlock_blob(int fd);

#endif
