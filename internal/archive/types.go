// Package archive decides what a WAL archive bucket must look like: its name rules, the guards that keep
// point-in-time recovery possible (versioning, encryption, lifecycle that never expires current objects,
// no public access, TLS only), the settings database nodes need (WAL-G environment, pgBackRest options)
// and the least-privilege policies. It is pure: adapters apply and read what it describes.
package archive

// Compression methods WAL-G supports (WALG_COMPRESSION_METHOD).
const (
	CompressionLZ4     = "lz4"
	CompressionLZMA    = "lzma"
	CompressionZSTD    = "zstd"
	CompressionBrotli  = "brotli"
	DefaultCompression = CompressionLZ4
)

// Object Lock retention modes.
const (
	LockGovernance = "GOVERNANCE"
	LockCompliance = "COMPLIANCE"
)

// Defaults of the lifecycle rules.
const (
	DefaultNoncurrentVersionExpirationDays    = 7
	DefaultAbortIncompleteMultipartUploadDays = 1
)

// Server-side encryption algorithms as S3 names them.
const (
	SSEKMS    = "aws:kms"
	SSEAES256 = "AES256"
)

// ObjectLock is the bucket's default retention. Object Lock can only be enabled when the bucket is created.
type ObjectLock struct {
	Mode string // LockGovernance or LockCompliance
	Days int    // >= 1
}

// Replica is a second bucket in another region that receives every object by S3 replication.
type Replica struct {
	Region       string
	Bucket       string
	KMSKeyARN    string // "" = AES256 on the replica
	StorageClass string // "" = STANDARD
	// KeepDeleted stops delete markers from being replicated: objects WAL-G deletes from the archive stay
	// current in the replica (protection against deletes at the source, paid for in storage). The default,
	// false, replicates delete markers so the replica's lifecycle expires what the archive's retention drops.
	KeepDeleted bool
}

// Endpoint is the S3 endpoint override configured on the provider ("" URL means AWS itself).
type Endpoint struct {
	URL       string // e.g. https://localhost:9443
	PathStyle bool
}

// Spec is one archive bucket as the user described it (after bucket_prefix was turned into a name).
type Spec struct {
	Bucket                             string
	Prefix                             string // path inside the bucket for this cluster, no leading or trailing "/"; may be ""
	Region                             string
	Partition                          string // "aws" when empty
	KMSKeyARN                          string // "" = AES256
	NoncurrentVersionExpirationDays    int
	AbortIncompleteMultipartUploadDays int
	ObjectLock                         *ObjectLock
	Replica                            *Replica
	Compression                        string
	DenyInsecureTransport              bool
	Endpoint                           Endpoint
}

// PublicAccessBlock is the bucket's public access block configuration.
type PublicAccessBlock struct {
	BlockPublicAcls       bool
	IgnorePublicAcls      bool
	BlockPublicPolicy     bool
	RestrictPublicBuckets bool
}

// Encryption is the bucket's default encryption.
type Encryption struct {
	Algorithm string // SSEKMS or SSEAES256; "" = none
	KMSKeyARN string // with SSEKMS
	BucketKey bool
}

// LifecycleRule is one rule of a bucket lifecycle configuration, reduced to what matters here. A rule read
// from S3 that does something this model does not describe sets Other to a short description.
type LifecycleRule struct {
	ID                        string
	Enabled                   bool
	Prefix                    string // filter prefix; "" = whole bucket
	ExpirationDays            int    // expiry of CURRENT objects: must stay 0 on an archive
	ExpiresOnDate             bool   // current objects expire on a date (also in Other)
	NoncurrentExpirationDays  int
	AbortIncompleteUploadDays int
	Other                     string
}

// Replication is the bucket's replication rule towards the replica.
type Replication struct {
	RoleARN              string
	RuleID               string
	Enabled              bool
	DestinationBucketARN string
	StorageClass         string // "" = same as source
	ReplicaKMSKeyARN     string // "" when the replica uses AES256
	DeleteMarkers        bool   // replicate delete markers
}

// Guards is the complete guarded configuration of a bucket: what the provider applies, and what it reads
// back to detect drift.
type Guards struct {
	Versioning        string // "Enabled" | "Suspended" | "" (never enabled)
	PublicAccessBlock PublicAccessBlock
	ObjectOwnership   string // "BucketOwnerEnforced" | "BucketOwnerPreferred" | "ObjectWriter" | ""
	Encryption        Encryption
	Lifecycle         []LifecycleRule
	PolicyJSON        string       // "" = no bucket policy
	Replication       *Replication // nil = none
}
