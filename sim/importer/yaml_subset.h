// The block-style YAML that configuration dumps write (Megatron-Bridge's
// ConfigContainer.to_yaml, OmegaConf): nested mappings by indentation, block
// sequences ("- item", "- - item", "- key: value"), scalars (null / ~,
// true / false, integers, floats, single- or double-quoted and plain
// strings), empty flow collections ([] and {}), flow sequences of scalars
// ([a, b]) and comments. Anchors, aliases, tags, multi-line scalars and flow
// mappings with content are refused with the line they are on: a
// configuration dump does not write them.
#ifndef STACKSIM_SIM_IMPORTER_YAML_SUBSET_H_
#define STACKSIM_SIM_IMPORTER_YAML_SUBSET_H_

#include <string>

#include <nlohmann/json.hpp>

namespace stacksim::importer {

// Throws InputError(file, "line N", why) for what the subset does not read.
nlohmann::json ParseYamlSubset(const std::string& text, const std::string& file);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_YAML_SUBSET_H_
