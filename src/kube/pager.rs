//! LISTs read page by page, as client-go's pager reads them (kubernetes
//! `staging/src/k8s.io/client-go/tools/pager/pager.go`, `ListPager.List`): `limit` objects a
//! page, the next page asked with the `continue` token the last one gave, until none is given.
//! A token the server no longer honours (410 with reason `Expired`: apimachinery
//! `pkg/api/errors` `NewResourceExpired`, written by apiserver `pkg/storage/etcd3` when the
//! list's revision was compacted) starts the list again as one unpaged LIST, what the pager's
//! `FullListIfExpired` does; the pages read before are dropped, never kept twice.

use ::kube::api::ListParams;
use ::kube::core::{ErrorResponse, Request};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::{Cluster, KubeError, Op};

/// Objects a page: client-go's `defaultPageSize`, and kubectl's `--chunk-size`.
pub const PAGE_SIZE: u32 = 500;

/// Where a LIST reads and how.
pub(super) struct ListAt {
    /// The collection's URL path (`/apis/<group>/<version>/namespaces/<ns>/<plural>`).
    pub path: String,
    /// A label selector, if any.
    pub labels: Option<String>,
    /// Ask for `PartialObjectMetadataList`: the objects' metadata only.
    pub metadata: bool,
    /// The resource with its group, for errors (`externalsecrets.external-secrets.io`).
    pub resource: String,
    /// The namespace; `None` across namespaces.
    pub namespace: Option<String>,
}

/// Where a LIST's pages go: each page is handed over as soon as it is read, so a platform's
/// listing is never gathered whole before it is put away.
pub(super) trait Pages<T> {
    /// One page's items, in list order.
    fn page(&mut self, items: Vec<T>);
    /// Drop every item handed over so far: the list starts again.
    fn restart(&mut self);
}

/// The list metadata of a page: only the token matters here.
#[derive(Deserialize, Default)]
pub(super) struct ListMeta {
    #[serde(default, rename = "continue")]
    pub continue_token: Option<String>,
}

impl Cluster {
    /// Every object of the LIST `at`, each page's text read by `page` into its items and its
    /// `continue` token (the text is zeroized after: a page of Secrets holds values), handed to
    /// `into` page by page. The requests it took; `None` when the server does not serve the path
    /// (404).
    pub(super) async fn list_pages<T>(
        &self,
        at: &ListAt,
        page: impl Fn(&str) -> Result<(Vec<T>, Option<String>), String>,
        into: &mut dyn Pages<T>,
    ) -> Result<Option<usize>, KubeError> {
        let mut pages = 0;
        let mut token: Option<String> = None;
        let mut limit = Some(PAGE_SIZE);
        loop {
            let lp = ListParams {
                limit,
                continue_token: token.clone(),
                label_selector: at.labels.clone(),
                ..ListParams::default()
            };
            let op = || Op {
                verb: "list",
                resource: at.resource.clone(),
                namespace: at.namespace.as_deref(),
                name: at.labels.as_deref().unwrap_or(""),
            };
            let built = if at.metadata {
                Request::new(&at.path).list_metadata(&lp)
            } else {
                Request::new(&at.path).list(&lp)
            };
            let request = built.map_err(|e| self.decode_error(&op(), e.to_string()))?;
            pages += 1;
            let text = match self.client.request_text(request).await {
                Ok(text) => Zeroizing::new(text),
                Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => {
                    into.restart();
                    return Ok(None);
                }
                Err(::kube::Error::Api(ErrorResponse {
                    code: 410, reason, ..
                })) if reason == "Expired" && token.is_some() => {
                    tracing::debug!(path = %at.path, "continue token expired: listing again in one request");
                    into.restart();
                    token = None;
                    limit = None;
                    continue;
                }
                Err(e) => return Err(self.error(e, op())),
            };
            let (items, next) = page(&text).map_err(|detail| self.decode_error(&op(), detail))?;
            into.page(items);
            match next.filter(|t| !t.is_empty()) {
                Some(next) if limit.is_some() => token = Some(next),
                _ => return Ok(Some(pages)),
            }
        }
    }
}

/// A page whose items are plain JSON (kinds whose values are not secret), each read by `item`
/// as it is parsed: one item's JSON is held at a time, not the page's.
pub(super) fn json_page<T>(
    text: &str,
    item: &dyn Fn(serde_json::Value) -> T,
) -> Result<(Vec<T>, Option<String>), String> {
    let mut de = serde_json::Deserializer::from_str(text);
    PageSeed(item).deserialize(&mut de).map_err(|e| {
        format!(
            "not a list ({:?} error at line {} column {})",
            e.classify(),
            e.line(),
            e.column()
        )
    })
}

/// A list: its token, and each item read by the function.
struct PageSeed<'f, T>(&'f dyn Fn(serde_json::Value) -> T);

impl<'de, T> DeserializeSeed<'de> for PageSeed<'_, T> {
    type Value = (Vec<T>, Option<String>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T> Visitor<'de> for PageSeed<'_, T> {
    type Value = (Vec<T>, Option<String>);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut items, mut next) = (Vec::new(), None);
        while let Some(member) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match member.as_ref() {
                "metadata" => next = map.next_value::<ListMeta>()?.continue_token,
                "items" => items = map.next_value_seed(Each(ByFn(self.0)))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((items, next))
    }
}

/// `items`: null, or each item read by the seed `S`.
pub(super) struct Each<S>(pub S);

impl<'de, S: DeserializeSeed<'de> + Copy> DeserializeSeed<'de> for Each<S> {
    type Value = Vec<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for Each<S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list's items")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element_seed(self.0)? {
            out.push(item);
        }
        Ok(out)
    }
}

/// One item as JSON, read by the function.
struct ByFn<'f, T>(&'f dyn Fn(serde_json::Value) -> T);

impl<T> Clone for ByFn<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ByFn<'_, T> {}

impl<'de, T> DeserializeSeed<'de> for ByFn<'_, T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok((self.0)(v))
    }
}
