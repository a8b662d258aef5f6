/*
 * xplane-fields.h - the XSpace schema's field numbers and the wire tags the
 * hand-written parsers test for, named once.
 *
 * Source: decode/proto/xplane.proto (the interface; protoc-c generates the
 * tools' and tests' code from it) and docs in /work/shared/reference. The
 * decoder itself never uses the generated code: it walks the wire format with
 * these numbers. A tag byte is (field << 3) | wire type, one byte for fields
 * up to 15.
 */
#ifndef XPROFS_DECODE_XPLANE_FIELDS_H
#define XPROFS_DECODE_XPLANE_FIELDS_H

/* Wire types (protobuf encoding); groups (3, 4) never occur in XSpace. */
enum dec_wire { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* The one-byte tag of field @f (1..15) with wire type @wt. */
#define DEC_TAG(f, wt) ((unsigned)(((f) << 3) | (wt)))

/* XSpace */
#define XSPACE_F_PLANES 1    /* repeated XPlane */
#define XSPACE_F_ERRORS 2    /* repeated string */
#define XSPACE_F_WARNINGS 3  /* repeated string */
#define XSPACE_F_HOSTNAMES 4 /* repeated string */

/* XPlane */
#define XPLANE_F_ID 1             /* int64 */
#define XPLANE_F_NAME 2           /* string */
#define XPLANE_F_LINES 3          /* repeated XLine */
#define XPLANE_F_EVENT_METADATA 4 /* map<int64, XEventMetadata> */
#define XPLANE_F_STAT_METADATA 5  /* map<int64, XStatMetadata> */
#define XPLANE_F_STATS 6          /* repeated XStat */

/* A map entry (maps are repeated entry messages). */
#define MAPENTRY_F_KEY 1   /* int64 */
#define MAPENTRY_F_VALUE 2 /* the value message */

/* XLine (5-8 reserved) */
#define XLINE_F_ID 1            /* int64 */
#define XLINE_F_NAME 2          /* string */
#define XLINE_F_TIMESTAMP_NS 3  /* int64 */
#define XLINE_F_EVENTS 4        /* repeated XEvent */
#define XLINE_F_DURATION_PS 9   /* int64 */
#define XLINE_F_DISPLAY_ID 10   /* int64 */
#define XLINE_F_DISPLAY_NAME 11 /* string */

/* XEvent: offset_ps and num_occurrences are one oneof. */
#define XEVENT_F_METADATA_ID 1     /* int64 */
#define XEVENT_F_OFFSET_PS 2       /* int64 */
#define XEVENT_F_DURATION_PS 3     /* int64 */
#define XEVENT_F_STATS 4           /* repeated XStat */
#define XEVENT_F_NUM_OCCURRENCES 5 /* int64 */
#define XEVENT_F_LAST 5            /* highest field number the schema knows */

/* XStat: fields 2..8 are the oneof value. */
#define XSTAT_F_METADATA_ID 1
#define XSTAT_F_DOUBLE 2     /* double */
#define XSTAT_F_UINT64 3     /* uint64 */
#define XSTAT_F_INT64 4      /* int64 */
#define XSTAT_F_STR 5        /* string */
#define XSTAT_F_BYTES 6      /* bytes */
#define XSTAT_F_REF 7        /* uint64: a key into the plane's stat_metadata */
#define XSTAT_F_COMPRESSED 8 /* bytes: a gzip-compressed string (newest schema) */
#define XSTAT_F_LAST 8

/* XEventMetadata */
#define XEVMD_F_ID 1
#define XEVMD_F_NAME 2
#define XEVMD_F_METADATA 3
#define XEVMD_F_DISPLAY_NAME 4
#define XEVMD_F_STATS 5 /* repeated XStat, before an event's own */
#define XEVMD_F_CHILD_ID 6

/* XStatMetadata */
#define XSTMD_F_ID 1
#define XSTMD_F_NAME 2
#define XSTMD_F_DESCRIPTION 3

/* The tags the hot paths test for byte-wise. */
#define TAG_XLINE_EVENT DEC_TAG(XLINE_F_EVENTS, WT_LEN)                 /* 0x22 */
#define TAG_XEVENT_METADATA_ID DEC_TAG(XEVENT_F_METADATA_ID, WT_VARINT) /* 0x08 */
#define TAG_XEVENT_OFFSET_PS DEC_TAG(XEVENT_F_OFFSET_PS, WT_VARINT)     /* 0x10 */
#define TAG_XEVENT_DURATION_PS DEC_TAG(XEVENT_F_DURATION_PS, WT_VARINT) /* 0x18 */
#define TAG_XEVENT_STAT DEC_TAG(XEVENT_F_STATS, WT_LEN)                 /* 0x22 */

#endif
