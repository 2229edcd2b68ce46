// Errors stacksim reports to its user.
//
// InputError: the user's input is wrong (a file, a key, a value, a plan that
// cannot run). It names the file and the key path; the CLI prints it and exits
// with status 2. Everything else that escapes is an internal failure (status 1).
#ifndef STACKSIM_SIM_UTIL_ERROR_H_
#define STACKSIM_SIM_UTIL_ERROR_H_

#include <stdexcept>
#include <string>

namespace stacksim {

class InputError : public std::runtime_error {
 public:
  // file: the input file ("" when the input is not a file, e.g. a --set flag);
  // key_path: dotted path to the offending key ("" for the whole file).
  InputError(std::string file, std::string key_path, const std::string& message)
      : std::runtime_error(Format(file, key_path, message)),
        file_(std::move(file)),
        key_path_(std::move(key_path)) {}

  const std::string& file() const { return file_; }
  const std::string& key_path() const { return key_path_; }

 private:
  static std::string Format(const std::string& file, const std::string& path,
                            const std::string& message) {
    std::string out = file.empty() ? std::string() : file + ": ";
    if (!path.empty()) out += path + ": ";
    return out + message;
  }
  std::string file_;
  std::string key_path_;
};

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_ERROR_H_
