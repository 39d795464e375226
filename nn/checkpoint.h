// (placeholder of the issue-14 base commit; its owner replaces this header)
#pragma once
