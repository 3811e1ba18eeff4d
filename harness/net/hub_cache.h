/* harness/net/hub_cache.h: private to net/: writing the hub cache: folders that never go through
 * a symlink, refs, snapshot links to blobs, files written through a temporary and a rename. */
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

#endif
