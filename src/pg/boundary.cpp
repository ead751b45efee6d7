// Mapping core errors to SQLSTATEs and raising them once C++ has unwound.
#include "pg/boundary.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

namespace spotsigs::pg {

void check_interrupts() {
    pg_guard([] { CHECK_FOR_INTERRUPTS(); });
}

int sqlstate_for(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidText: return ERRCODE_INVALID_TEXT_REPRESENTATION;
        case ErrorKind::InvalidBinary: return ERRCODE_INVALID_BINARY_REPRESENTATION;
        case ErrorKind::InvalidParameter: return ERRCODE_INVALID_PARAMETER_VALUE;
        case ErrorKind::ArrayMismatch: return ERRCODE_ARRAY_SUBSCRIPT_ERROR;
        case ErrorKind::NullValue: return ERRCODE_NULL_VALUE_NOT_ALLOWED;
        case ErrorKind::ProgramLimit: return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
        case ErrorKind::OutOfMemory: return ERRCODE_OUT_OF_MEMORY;
        case ErrorKind::Canceled: return ERRCODE_QUERY_CANCELED;
        case ErrorKind::DataCorrupted: return ERRCODE_DATA_CORRUPTED;
        case ErrorKind::Internal: break;
    }
    return ERRCODE_INTERNAL_ERROR;
}

// Copies s into a fixed buffer, truncating.
static void copy_text(char* dst, size_t cap, const char* s) noexcept {
    std::snprintf(dst, cap, "%s", s);
}

void record_current_exception(CaughtError& out) noexcept {
    try {
        throw;
    } catch (const PgError& e) {
        out.pg = e.edata;
    } catch (const Error& e) {
        out.sqlstate = sqlstate_for(e.kind());
        copy_text(out.message, sizeof out.message, e.what());
        copy_text(out.detail, sizeof out.detail, e.detail().c_str());
    } catch (const std::bad_alloc&) {
        out.sqlstate = ERRCODE_OUT_OF_MEMORY;
        copy_text(out.message, sizeof out.message, "out of memory");
    } catch (const std::exception& e) {
        out.sqlstate = ERRCODE_INTERNAL_ERROR;
        copy_text(out.message, sizeof out.message, "internal error in spotsigs");
        copy_text(out.detail, sizeof out.detail, e.what());
    } catch (...) {
        out.sqlstate = ERRCODE_INTERNAL_ERROR;
        copy_text(out.message, sizeof out.message, "internal error in spotsigs");
    }
}

void raise_recorded(const CaughtError& e) {
    if (e.pg != nullptr) ReThrowError(e.pg);
    ereport(ERROR, (errcode(e.sqlstate), errmsg("%s", e.message), e.detail[0] ? errdetail("%s", e.detail) : 0));
    pg_unreachable();
}

}  // namespace spotsigs::pg
