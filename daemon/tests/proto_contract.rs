//! The wire contract: daemon/proto/cuzk/v1/proving.proto must describe the same package,
//! messages (field names, numbers, types, labels), enums (value names and numbers) and service
//! methods as Curio's proving.proto (tests/fixtures/curio), so that Curio's generated client
//! talks to the daemon unchanged. build.rs compiles both into descriptor sets with protoc.

use std::collections::BTreeMap;

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};

/// Every item of a descriptor set as "kind path" → its wire-relevant description, one line per
/// field, enum value or method.
fn contract(descriptor_set: &[u8]) -> BTreeMap<String, Vec<String>> {
    let set = FileDescriptorSet::decode(descriptor_set).expect("a descriptor set from protoc");
    let mut items = BTreeMap::new();
    for file in &set.file {
        let package = file.package().to_string();
        items.insert("package".to_string(), vec![package.clone(), format!("syntax {}", file.syntax())]);
        for message in &file.message_type {
            add_message(&mut items, &package, message);
        }
        for e in &file.enum_type {
            add_enum(&mut items, &package, e);
        }
        for service in &file.service {
            let methods = service
                .method
                .iter()
                .map(|m| {
                    format!(
                        "{}({}{}) returns ({}{})",
                        m.name(),
                        if m.client_streaming() { "stream " } else { "" },
                        m.input_type(),
                        if m.server_streaming() { "stream " } else { "" },
                        m.output_type()
                    )
                })
                .collect();
            items.insert(format!("service {package}.{}", service.name()), methods);
        }
    }
    items
}

fn add_message(items: &mut BTreeMap<String, Vec<String>>, scope: &str, message: &DescriptorProto) {
    let path = format!("{scope}.{}", message.name());
    let fields = message
        .field
        .iter()
        .map(|f| format!("{} = {}: {:?} {:?} {}", f.name(), f.number(), f.label(), f.r#type(), f.type_name()))
        .collect();
    items.insert(format!("message {path}"), fields);
    for nested in &message.nested_type {
        add_message(items, &path, nested);
    }
    for e in &message.enum_type {
        add_enum(items, &path, e);
    }
}

fn add_enum(items: &mut BTreeMap<String, Vec<String>>, scope: &str, e: &EnumDescriptorProto) {
    let values = e.value.iter().map(|v| format!("{} = {}", v.name(), v.number())).collect();
    items.insert(format!("enum {scope}.{}", e.name()), values);
}

#[test]
fn our_proto_is_curios_contract() {
    let ours = contract(include_bytes!(concat!(env!("OUT_DIR"), "/ours.descriptor.bin")));
    let curio = contract(include_bytes!(concat!(env!("OUT_DIR"), "/curio.descriptor.bin")));
    for (item, description) in &curio {
        assert_eq!(ours.get(item), Some(description), "{item} differs from Curio's");
    }
    let extra: Vec<&String> = ours.keys().filter(|item| !curio.contains_key(*item)).collect();
    assert!(extra.is_empty(), "items Curio's proto does not have: {extra:?}");
    // The comparison saw the whole contract.
    assert!(curio.contains_key("service cuzk.v1.ProvingEngine"));
    assert!(curio.contains_key("enum cuzk.v1.AwaitProofResponse.Status"));
    assert_eq!(curio["service cuzk.v1.ProvingEngine"].len(), 8);
}
