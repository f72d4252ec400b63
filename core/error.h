// Errors every layer throws for bad input (contract §5).
//
// The contract: an error names the argument, the value it was given and the allowed
// range, so a user reading one line knows what to change. Nothing in this project
// reports bad input any other way (no asserts on user data, no NaN results).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace sparseattn {

// Bad input from a caller: a flag, a tensor shape, a file's contents.
// what() reads: "invalid <argument> = <value>: <allowed>".
class InvalidArgument : public std::invalid_argument {
 public:
  InvalidArgument(const std::string& argument, const std::string& value,
                  const std::string& allowed)
      : std::invalid_argument("invalid " + argument + " = " + value + ": " + allowed),
        argument_(argument),
        value_(value),
        allowed_(allowed) {}

  const std::string& argument() const { return argument_; }
  const std::string& value() const { return value_; }
  const std::string& allowed() const { return allowed_; }

 private:
  std::string argument_;
  std::string value_;
  std::string allowed_;
};

// Bad input that asks for more memory than the machine has (a shape whose buffer cannot
// fit, contract §5): still the caller's argument, so an InvalidArgument; Python raises
// MemoryError for it.
class MemoryLimitError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// Something outside the caller's control went wrong (a file could not be written,
// no CUDA device). Still names what failed.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class T>
std::string to_text(const T& value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

// Throws InvalidArgument(argument, value, allowed) unless ok.
template <class T>
void require(bool ok, const std::string& argument, const T& value, const std::string& allowed) {
  if (!ok) throw InvalidArgument(argument, to_text(value), allowed);
}

}  // namespace sparseattn
