/*
 * xprofs/fs.h - the xprofs FUSE daemon as a library call, so the executable
 * (fs/main.c) stays a one-liner and tests can drive the same entry point.
 *
 * Command line: xprofs SOURCE MOUNTPOINT [-f] [-d] [-o opt[,opt...]]
 * (see docs/fs.md for the options). SOURCE is a local log directory or
 * gs://BUCKET[/PREFIX]. Without -f the process daemonises, but only after
 * the source is opened and the mount is live, so every startup error is
 * reported on stderr with a non-zero exit status.
 */
#ifndef XPROFS_FS_H
#define XPROFS_FS_H

/**
 * xprofs_fs_main() - parse @argc/@argv (borrowed), mount, serve until
 * unmounted or signalled. It is a program entry point: it initialises
 * libcurl's global state (curl_global_init()) before any backend or thread
 * starts and cleans it up before returning. Return: the process exit status
 * (0 on a clean unmount, 1 on a usage or startup error).
 */
int xprofs_fs_main(int argc, char *argv[]);

#endif
