// The C++/PostgreSQL boundary: C++ exceptions never reach PostgreSQL, and PostgreSQL errors
// never longjmp over live C++ objects.
//
// Two directions:
//  * pg_guard(f) runs PostgreSQL code from C++: an ereport(ERROR) inside f is caught with
//    PG_TRY, its ErrorData copied, and thrown on as a C++ PgError, so C++ frames unwind normally.
//  * pg_entry(f) runs C++ code from an fmgr entry point: every exception is caught and its
//    message copied into plain buffers; only after the try block (and so every destructor) has
//    finished is ereport(ERROR) called, or the original PostgreSQL error re-thrown.
// Rule for callers: inside pg_entry, reach PostgreSQL only through pg_guard. Entry points fetch
// (and detoast) their arguments before entering pg_entry, while no C++ object is alive.
#pragma once

#include "pg/pg.hpp"

#include <new>
#include <utility>

#include "core/common/error.hpp"

namespace spotsigs::pg {

// A PostgreSQL error caught by pg_guard, carried through C++ frames.
struct PgError {
    ErrorData* edata;
};

// Runs f() (PostgreSQL calls, no C++ objects with destructors inside) and turns an
// ereport(ERROR) into a thrown PgError.
template <class F>
void pg_guard(F&& f) {
    MemoryContext cxt = CurrentMemoryContext;
    ErrorData* volatile edata = nullptr;
    PG_TRY();
    { f(); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(cxt);
        edata = CopyErrorData();
        FlushErrorState();
    }
    PG_END_TRY();
    if (edata != nullptr) throw PgError{edata};
}

// Calls CHECK_FOR_INTERRUPTS() from C++ code on the backend's main thread.
void check_interrupts();

// The SQLSTATE for a core error kind.
int sqlstate_for(ErrorKind kind);

// What pg_entry remembers of a caught exception, in buffers with no destructors.
struct CaughtError {
    ErrorData* pg = nullptr;
    int sqlstate = 0;
    char message[512] = {0};
    char detail[1024] = {0};
};

// Records a C++ exception (called from inside a catch block).
void record_current_exception(CaughtError& out) noexcept;

// Raises the recorded error with ereport/ReThrowError; never returns.
[[noreturn]] void raise_recorded(const CaughtError& e);

// Runs f() -> Datum, converting any exception into a PostgreSQL ERROR after unwinding.
template <class F>
Datum pg_entry(F&& f) {
    CaughtError err;
    Datum result = 0;
    bool failed = false;
    try {
        result = f();
    } catch (...) {
        record_current_exception(err);
        failed = true;
    }
    if (failed) raise_recorded(err);
    return result;
}

}  // namespace spotsigs::pg
