/* fs/main.c - the xprofs executable: everything lives in fs_lib (fs/daemon.c). */
#include "xprofs/fs.h"

int main(int argc, char *argv[])
{
	return xprofs_fs_main(argc, argv);
}
