// What differs between the PostgreSQL major versions spotsigs builds against (15, 17, 18), in
// one place: each name below is the newest spelling, mapped onto the older release's API.
// Included by pg/pg.hpp after PostgreSQL's own headers; code that needs one of these includes the
// PostgreSQL header that declares it first (the compat names are macros or inline functions over
// them). Calls whose arguments changed are handled where they are made, under #if PG_VERSION_NUM.
#pragma once

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "spotsigs builds against PostgreSQL 15 to 18"
#endif

#if PG_VERSION_NUM >= 160000
// 16 moved the varlena macros (VARDATA_ANY, ...) out of postgres.h into varatt.h.
extern "C" {
#include "varatt.h"
}
#endif

// 16 renamed a relation's physical storage from RelFileNode (rd_node) to RelFileLocator
// (rd_locator), and the SMgrRelation's from smgr_rnode.node to smgr_rlocator.locator.
#if PG_VERSION_NUM < 160000
#define SPOTSIGS_STORAGE_T RelFileNode
#define SPOTSIGS_STORAGE_OF(rel) ((rel)->rd_node)
#define SPOTSIGS_STORAGE_EQUAL(a, b) RelFileNodeEquals(a, b)
#define SPOTSIGS_SMGR_STORAGE(smgr) (&(smgr)->smgr_rnode.node)
#else
#define SPOTSIGS_STORAGE_T RelFileLocator
#define SPOTSIGS_STORAGE_OF(rel) ((rel)->rd_locator)
#define SPOTSIGS_STORAGE_EQUAL(a, b) RelFileLocatorEquals(a, b)
#define SPOTSIGS_SMGR_STORAGE(smgr) (&(smgr)->smgr_rlocator.locator)
#endif

// 16 replaced pg_class_ownercheck and its kind by object_ownercheck(classid, ...).
#if PG_VERSION_NUM < 160000
#define SPOTSIGS_REL_OWNERCHECK(relid, user) pg_class_ownercheck(relid, user)
#else
#define SPOTSIGS_REL_OWNERCHECK(relid, user) object_ownercheck(RelationRelationId, relid, user)
#endif

// 18 declares base64's binary side (pg_b64_encode's source, pg_b64_decode's target) as uint8.
#if PG_VERSION_NUM < 180000
typedef char spotsigs_b64_byte;
#else
typedef uint8 spotsigs_b64_byte;
#endif

// 18 gave heap_form_minimal_tuple room for extra bytes before the tuple (none here).
#if PG_VERSION_NUM < 180000
#define SPOTSIGS_FORM_MINIMAL_TUPLE(desc, values, nulls) heap_form_minimal_tuple(desc, values, nulls)
#else
#define SPOTSIGS_FORM_MINIMAL_TUPLE(desc, values, nulls) heap_form_minimal_tuple(desc, values, nulls, 0)
#endif

// 18 lets RelationGetPrimaryKeyIndex return a deferrable primary key on request; before, a
// deferrable one was never returned, and the trigger keeps that: its key must be immediate.
#if PG_VERSION_NUM < 180000
#define SPOTSIGS_PRIMARY_KEY_INDEX(rel) RelationGetPrimaryKeyIndex(rel)
#else
#define SPOTSIGS_PRIMARY_KEY_INDEX(rel) RelationGetPrimaryKeyIndex(rel, false)
#endif

// 17 moved a backend's local transaction id into its virtual transaction id (MyProc->vxid.lxid).
#if PG_VERSION_NUM < 170000
#define SPOTSIGS_MY_LXID() (MyProc->lxid)
#else
#define SPOTSIGS_MY_LXID() (MyProc->vxid.lxid)
#endif

// 16 moved the memory of string settings and of check hooks' extra into a memory context of its
// own: a check hook allocates what it hands back with guc_malloc and frees with guc_free; 15
// still used malloc and free.
#if PG_VERSION_NUM < 160000
#define SPOTSIGS_GUC_MALLOC(n) std::malloc(n)
#define SPOTSIGS_GUC_FREE(p) std::free(p)
#else
#define SPOTSIGS_GUC_MALLOC(n) guc_malloc(LOG, n)
#define SPOTSIGS_GUC_FREE(p) guc_free(p)
#endif
