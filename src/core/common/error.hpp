// Errors raised by the pure C++ core; the PostgreSQL layer maps each kind to a SQLSTATE.
#pragma once

#include <stdexcept>
#include <string>

namespace spotsigs {

// What went wrong, in the terms a caller needs to choose an error code.
enum class ErrorKind {
    InvalidText,       // malformed input literal (22P02)
    InvalidBinary,     // malformed binary (send/receive) value (22P03)
    InvalidParameter,  // an argument out of its range (22023)
    ArrayMismatch,     // arrays that must line up do not (2202E)
    NullValue,         // a NULL where none is allowed (22004)
    ProgramLimit,      // input beyond a documented size limit (54000)
    OutOfMemory,       // a memory budget was exceeded (53200)
    Canceled,          // the caller asked us to stop (57014)
    DataCorrupted,     // a stored value failed validation (XX001)
    Internal           // a bug (XX000)
};

// An exception carrying a kind, a message and an optional detail line.
class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message, std::string detail = {})
        : std::runtime_error(message), kind_(kind), detail_(std::move(detail)) {}
    // The category used to pick the SQLSTATE.
    ErrorKind kind() const noexcept { return kind_; }
    // Extra context, empty when there is none.
    const std::string& detail() const noexcept { return detail_; }

private:
    ErrorKind kind_;
    std::string detail_;
};

}  // namespace spotsigs
